#include "chat/jinja/parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <initializer_list>

#include "chat/jinja/error.h"
#include "chat/jinja/filters.h"
#include "chat/jinja/lexer.h"
#include "chat/jinja/value_tests.h"
#include "util/recursion_budget.h"

namespace vllm::chat::jinja {

namespace {

// Nesting beyond this is refused rather than risking the parser's stack.
constexpr RecursionLimit kNesting{"a block or expression", 200};
// Height of an expression tree (Expr::height). 100,000 chained filters
// overflowed the stack when rendered; real templates stay far below this.
// The parser builds such chains in loops; rendering and freeing them recurse.
constexpr RecursionLimit kExpressionHeight{"the expression", 1000};

class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

    Template run() {
        Template t;
        std::string end_tag = parse_body(t.body, {});
        (void)end_tag;
        return t;
    }

private:
    // ------------------------------------------------------------ tokens

    const Token& current() const { return tokens_[pos_]; }
    const Token& peek(size_t ahead = 1) const {
        size_t at = pos_ + ahead;
        return tokens_[at < tokens_.size() ? at : tokens_.size() - 1];
    }
    const Token& next() {
        const Token& t = tokens_[pos_];
        if (pos_ + 1 < tokens_.size()) ++pos_;
        return t;
    }

    [[noreturn]] void fail(const std::string& message) const { throw SyntaxError(current().line, message); }
    [[noreturn]] void fail_at(int line, const std::string& message) const { throw SyntaxError(line, message); }

    static std::string quoted(const Token& t) { return "'" + describe(t) + "'"; }

    bool is_op(const char* op) const { return current().type == TokenType::Operator && current().value == op; }
    bool is_name(const char* name) const { return current().type == TokenType::Name && current().value == name; }

    bool skip_op(const char* op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(const char* name) {
        if (!is_name(name)) return false;
        next();
        return true;
    }

    void expect_op(const char* op) {
        if (!skip_op(op)) fail(std::string("expected token '") + op + "', got " + quoted(current()));
    }
    void expect_name(const char* name) {
        if (!skip_name(name)) fail(std::string("expected token '") + name + "', got " + quoted(current()));
    }
    std::string expect_identifier(const char* what) {
        if (current().type != TokenType::Name) fail(std::string("expected ") + what + ", got " + quoted(current()));
        return next().value;
    }
    void expect_block_end() {
        if (current().type != TokenType::BlockEnd)
            fail("expected token 'end of statement block', got " + quoted(current()));
        next();
    }

    // One level deeper into blocks and expressions: the parser descends
    // recursively, so the nesting is bounded by kNesting and the stack.
    struct DepthGuard : RecursionGuard {
        explicit DepthGuard(Parser& p)
            : RecursionGuard(kNesting, p.depth_, [&p](const std::string& why) { p.fail(why); }) {}
    };

    // ------------------------------------------------------------ statements

    // Parses statements until a block tag named in `end_tags` (returned,
    // with the tokens up to that name consumed), or the end of the template
    // when `end_tags` is empty.
    std::string parse_body(Body& body, std::initializer_list<const char*> end_tags) {
        DepthGuard guard(*this);
        for (;;) {
            const Token& t = current();
            switch (t.type) {
                case TokenType::Text:
                    body.push_back(make_stmt(StmtType::Text, t.line));
                    body.back()->text = t.value;
                    next();
                    break;
                case TokenType::VariableBegin: {
                    int line = t.line;
                    next();
                    auto stmt = make_stmt(StmtType::Print, line);
                    stmt->exprs.push_back(parse_tuple(true));
                    if (current().type != TokenType::VariableEnd)
                        fail("expected token 'end of print statement', got " + quoted(current()));
                    next();
                    body.push_back(std::move(stmt));
                    break;
                }
                case TokenType::BlockBegin: {
                    const Token& tag = peek();
                    if (tag.type != TokenType::Name) {
                        next();
                        fail("tag name expected, got " + quoted(current()));
                    }
                    for (const char* end : end_tags) {
                        if (tag.value == end) {
                            next();
                            next();
                            return tag.value;
                        }
                    }
                    if (is_end_tag(tag.value)) fail_unexpected_end(tag, end_tags);
                    next();
                    body.push_back(parse_statement());
                    break;
                }
                case TokenType::End:
                    if (end_tags.size() == 0) return "";
                    fail(std::string("Unexpected end of template. Jinja was looking for the following tags: ") +
                         quoted_list(end_tags) + ".");
                default: fail("unexpected " + quoted(t));
            }
        }
    }

    static bool is_end_tag(const std::string& name) {
        return name.rfind("end", 0) == 0 || name == "elif" || name == "else";
    }

    static std::string quoted_list(std::initializer_list<const char*> tags) {
        std::string out;
        for (const char* tag : tags) {
            if (!out.empty()) out += " or ";
            out += std::string("'") + tag + "'";
        }
        return out;
    }

    [[noreturn]] void fail_unexpected_end(const Token& tag, std::initializer_list<const char*> end_tags) const {
        std::string message = "Encountered unknown tag '" + tag.value + "'.";
        if (end_tags.size() > 0) message += " Jinja was looking for the following tags: " + quoted_list(end_tags) + ".";
        fail_at(tag.line, message);
    }

    StmtPtr make_stmt(StmtType type, int line) {
        auto s = std::make_unique<Stmt>();
        s->type = type;
        s->line = line;
        return s;
    }

    // At the tag name, just after "{%".
    StmtPtr parse_statement() {
        const Token& tag = current();
        int line = tag.line;
        std::string name = tag.value;
        next();
        if (name == "if") return parse_if(line);
        if (name == "for") return parse_for(line);
        if (name == "set") return parse_set(line);
        if (name == "macro") return parse_macro(line);
        if (name == "call") return parse_call_block(line);
        if (name == "filter") return parse_filter_block(line);
        if (name == "with") return parse_with(line);
        if (name == "generation") return parse_simple_block(StmtType::Generation, line, "endgeneration");
        if (name == "print") {
            auto stmt = make_stmt(StmtType::Print, line);
            stmt->exprs.push_back(parse_tuple(true));
            expect_block_end();
            return stmt;
        }
        if (name == "break" || name == "continue") {
            if (loop_depth_ == 0) fail_at(line, "'" + name + "' outside of a for loop");
            expect_block_end();
            return make_stmt(name == "break" ? StmtType::Break : StmtType::Continue, line);
        }
        if (name == "extends" || name == "block" || name == "include" || name == "import" || name == "from" ||
            name == "autoescape" || name == "do" || name == "trans")
            fail_at(line, "the '" + name + "' tag is not supported in chat templates");
        fail_at(line, "Encountered unknown tag '" + name + "'.");
    }

    StmtPtr parse_if(int line) {
        auto stmt = make_stmt(StmtType::If, line);
        for (;;) {
            stmt->exprs.push_back(parse_tuple(false));
            expect_block_end();
            stmt->bodies.emplace_back();
            std::string end = parse_body(stmt->bodies.back(), {"elif", "else", "endif"});
            if (end == "elif") continue;
            if (end == "else") {
                expect_block_end();
                stmt->bodies.emplace_back();
                stmt->has_else = true;
                parse_body(stmt->bodies.back(), {"endif"});
            }
            expect_block_end();
            return stmt;
        }
    }

    // Names assigned by for/set: `x`, `a, b`, `(a, b)`.
    std::vector<std::string> parse_target_names(const char* context) {
        std::vector<std::string> names;
        bool parenthesized = skip_op("(");
        for (;;) {
            if (current().type != TokenType::Name || is_name("in"))
                fail(std::string("can't assign to ") + quoted(current()) + " in " + context);
            names.push_back(next().value);
            if (!skip_op(",")) break;
            if (current().type != TokenType::Name || is_name("in")) break;  // trailing comma
        }
        if (parenthesized) expect_op(")");
        return names;
    }

    StmtPtr parse_for(int line) {
        auto stmt = make_stmt(StmtType::For, line);
        stmt->targets = parse_target_names("a for loop");
        expect_name("in");
        stmt->exprs.push_back(parse_tuple(false, "recursive"));
        if (skip_name("if")) {
            stmt->exprs.push_back(parse_expression(true));
        } else {
            stmt->exprs.push_back(nullptr);
        }
        if (is_name("recursive")) fail("recursive for loops are not supported");
        expect_block_end();
        ++loop_depth_;
        stmt->bodies.emplace_back();
        std::string end = parse_body(stmt->bodies.back(), {"endfor", "else"});
        --loop_depth_;
        stmt->bodies.emplace_back();
        if (end == "else") {
            expect_block_end();
            stmt->has_else = true;
            // break/continue here belong to an enclosing loop, if any.
            parse_body(stmt->bodies.back(), {"endfor"});
        }
        expect_block_end();
        return stmt;
    }

    StmtPtr parse_set(int line) {
        if (current().type == TokenType::Name && peek().type == TokenType::Operator && peek().value == ".") {
            auto stmt = make_stmt(StmtType::Set, line);
            stmt->targets.push_back(next().value);
            next();
            stmt->target_attr = expect_identifier("an attribute name");
            expect_op("=");
            stmt->exprs.push_back(parse_tuple(true));
            expect_block_end();
            return stmt;
        }
        std::vector<std::string> names = parse_target_names("a set tag");
        if (skip_op("=")) {
            auto stmt = make_stmt(StmtType::Set, line);
            stmt->targets = std::move(names);
            stmt->exprs.push_back(parse_tuple(true));
            expect_block_end();
            return stmt;
        }
        if (names.size() != 1) fail("a set block assigns exactly one name");
        auto stmt = make_stmt(StmtType::SetBlock, line);
        stmt->targets = std::move(names);
        while (skip_op("|")) stmt->exprs.push_back(parse_filter(nullptr));
        expect_block_end();
        stmt->bodies.emplace_back();
        parse_body(stmt->bodies.back(), {"endset"});
        expect_block_end();
        return stmt;
    }

    void parse_params(Stmt& stmt) {
        expect_op("(");
        while (!is_op(")")) {
            if (!stmt.params.empty()) expect_op(",");
            if (is_op(")")) break;
            stmt.params.push_back(expect_identifier("a parameter name"));
            if (skip_op("=")) {
                stmt.defaults.push_back(parse_expression(true));
            } else {
                stmt.defaults.push_back(nullptr);
            }
        }
        next();
    }

    StmtPtr parse_macro(int line) {
        auto stmt = make_stmt(StmtType::Macro, line);
        stmt->targets.push_back(expect_identifier("a macro name"));
        parse_params(*stmt);
        expect_block_end();
        int saved = loop_depth_;
        loop_depth_ = 0;
        stmt->bodies.emplace_back();
        parse_body(stmt->bodies.back(), {"endmacro"});
        loop_depth_ = saved;
        if (current().type == TokenType::Name) next();  // {% endmacro name %}
        expect_block_end();
        return stmt;
    }

    StmtPtr parse_call_block(int line) {
        auto stmt = make_stmt(StmtType::CallBlock, line);
        if (is_op("(")) parse_params(*stmt);
        ExprPtr call = parse_expression(true);
        if (call->type != ExprType::Call) fail_at(line, "expected a call expression after 'call'");
        stmt->exprs.push_back(std::move(call));
        expect_block_end();
        int saved = loop_depth_;
        loop_depth_ = 0;
        stmt->bodies.emplace_back();
        parse_body(stmt->bodies.back(), {"endcall"});
        loop_depth_ = saved;
        expect_block_end();
        return stmt;
    }

    StmtPtr parse_filter_block(int line) {
        auto stmt = make_stmt(StmtType::FilterBlock, line);
        do {
            stmt->exprs.push_back(parse_filter(nullptr));
        } while (skip_op("|"));
        expect_block_end();
        stmt->bodies.emplace_back();
        parse_body(stmt->bodies.back(), {"endfilter"});
        expect_block_end();
        return stmt;
    }

    StmtPtr parse_with(int line) {
        auto stmt = make_stmt(StmtType::With, line);
        while (current().type != TokenType::BlockEnd) {
            if (!stmt->targets.empty()) expect_op(",");
            stmt->targets.push_back(expect_identifier("a name to assign"));
            expect_op("=");
            stmt->exprs.push_back(parse_expression(true));
        }
        expect_block_end();
        stmt->bodies.emplace_back();
        parse_body(stmt->bodies.back(), {"endwith"});
        expect_block_end();
        return stmt;
    }

    StmtPtr parse_simple_block(StmtType type, int line, const char* end_tag) {
        auto stmt = make_stmt(type, line);
        expect_block_end();
        stmt->bodies.emplace_back();
        parse_body(stmt->bodies.back(), {end_tag});
        expect_block_end();
        return stmt;
    }

    // ------------------------------------------------------------ expressions

    ExprPtr make_expr(ExprType type, int line) {
        auto e = std::make_unique<Expr>();
        e->type = type;
        e->line = line;
        return e;
    }

    bool is_tuple_end(const char* extra_end) const {
        const Token& t = current();
        if (t.type == TokenType::VariableEnd || t.type == TokenType::BlockEnd || t.type == TokenType::End) return true;
        if (t.type == TokenType::Operator && t.value == ")") return true;
        return extra_end != nullptr && t.type == TokenType::Name && t.value == extra_end;
    }

    // Comma-separated expressions; more than one (or a trailing comma) make a tuple.
    ExprPtr parse_tuple(bool with_condition, const char* extra_end = nullptr) {
        int line = current().line;
        std::vector<ExprPtr> items;
        bool saw_comma = false;
        for (;;) {
            if (!items.empty()) {
                if (!skip_op(",")) break;
                saw_comma = true;
                if (is_tuple_end(extra_end)) break;
            }
            if (items.empty() && is_tuple_end(extra_end)) fail("Expected an expression, got " + quoted(current()));
            items.push_back(parse_expression(with_condition));
        }
        if (!saw_comma) return std::move(items[0]);
        auto tuple = make_expr(ExprType::Tuple, line);
        tuple->operands = std::move(items);
        return tuple;
    }

    ExprPtr parse_expression(bool with_condition) {
        DepthGuard guard(*this);
        if (!with_condition) return parse_or();
        ExprPtr expr = parse_or();
        while (is_name("if")) {
            int line = current().line;
            next();
            auto cond = make_expr(ExprType::Condition, line);
            cond->operands.push_back(parse_or());
            cond->operands.push_back(std::move(expr));
            if (skip_name("else")) {
                cond->operands.push_back(parse_expression(true));
            } else {
                cond->operands.push_back(nullptr);
            }
            expr = bounded(std::move(cond));
        }
        return expr;
    }

    ExprPtr binary_node(ExprType type, ExprPtr left, ExprPtr right, int line) {
        auto e = make_expr(type, line);
        e->operands.push_back(std::move(left));
        e->operands.push_back(std::move(right));
        return bounded(std::move(e));
    }

    // Sets `e`'s height from its operands'; refuses a tree past the bound
    // (the chain is refused while it is short enough to be freed safely).
    ExprPtr bounded(ExprPtr e) {
        int below = 0;
        for (const ExprPtr& operand : e->operands)
            if (operand) below = std::max(below, operand->height);
        for (const auto& keyword : e->keywords)
            if (keyword.second) below = std::max(below, keyword.second->height);
        e->height = below + 1;
        if (e->height > kExpressionHeight.max_depth)
            fail_at(e->line, RecursionGuard::refusal(kExpressionHeight, e->height) +
                                 ": a chain of operators, filters or subscripts");
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (is_name("or")) {
            int line = next().line;
            left = binary_node(ExprType::Or, std::move(left), parse_and(), line);
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (is_name("and")) {
            int line = next().line;
            left = binary_node(ExprType::And, std::move(left), parse_not(), line);
        }
        return left;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            DepthGuard guard(*this);
            int line = next().line;
            auto e = make_expr(ExprType::Not, line);
            e->operands.push_back(parse_not());
            return bounded(std::move(e));
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        int line = current().line;
        ExprPtr first = parse_math1();
        std::unique_ptr<Expr> cmp;
        for (;;) {
            CompareOp op;
            if (skip_op("==")) op = CompareOp::Eq;
            else if (skip_op("!=")) op = CompareOp::Ne;
            else if (skip_op("<")) op = CompareOp::Lt;
            else if (skip_op("<=")) op = CompareOp::Le;
            else if (skip_op(">")) op = CompareOp::Gt;
            else if (skip_op(">=")) op = CompareOp::Ge;
            else if (skip_name("in")) op = CompareOp::In;
            else if (is_name("not") && peek().type == TokenType::Name && peek().value == "in") {
                next();
                next();
                op = CompareOp::NotIn;
            } else {
                break;
            }
            if (!cmp) {
                cmp = make_expr(ExprType::Compare, line);
                cmp->operands.push_back(std::move(first));
            }
            cmp->compare_ops.push_back(op);
            cmp->operands.push_back(parse_math1());
        }
        return cmp ? bounded(std::move(cmp)) : std::move(first);
    }

    ExprPtr binary_op(BinaryOp op, ExprPtr left, ExprPtr right, int line) {
        auto e = binary_node(ExprType::Binary, std::move(left), std::move(right), line);
        e->binary_op = op;
        return e;
    }

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        for (;;) {
            int line = current().line;
            if (skip_op("+")) left = binary_op(BinaryOp::Add, std::move(left), parse_concat(), line);
            else if (skip_op("-")) left = binary_op(BinaryOp::Sub, std::move(left), parse_concat(), line);
            else return left;
        }
    }

    ExprPtr parse_concat() {
        ExprPtr left = parse_math2();
        while (is_op("~")) {
            int line = next().line;
            left = binary_op(BinaryOp::Concat, std::move(left), parse_math2(), line);
        }
        return left;
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        for (;;) {
            int line = current().line;
            BinaryOp op;
            if (skip_op("*")) op = BinaryOp::Mul;
            else if (skip_op("/")) op = BinaryOp::Div;
            else if (skip_op("//")) op = BinaryOp::FloorDiv;
            else if (skip_op("%")) op = BinaryOp::Mod;
            else return left;
            left = binary_op(op, std::move(left), parse_pow(), line);
        }
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (is_op("**")) {
            int line = next().line;
            left = binary_op(BinaryOp::Pow, std::move(left), parse_unary(true), line);
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this);
        int line = current().line;
        ExprPtr node;
        if (skip_op("-")) {
            node = make_expr(ExprType::Negate, line);
            node->operands.push_back(parse_unary(false));
        } else if (skip_op("+")) {
            node = make_expr(ExprType::Plus, line);
            node->operands.push_back(parse_unary(false));
        } else {
            node = parse_primary();
        }
        node = parse_postfix(bounded(std::move(node)));
        if (with_filter) node = parse_filter_expr(std::move(node));
        return node;
    }

    ExprPtr literal(Value v, int line) {
        auto e = make_expr(ExprType::Literal, line);
        e->literal = std::move(v);
        return e;
    }

    ExprPtr parse_primary() {
        const Token& t = current();
        int line = t.line;
        switch (t.type) {
            case TokenType::Name: {
                std::string name = next().value;
                if (name == "true" || name == "True") return literal(Value(true), line);
                if (name == "false" || name == "False") return literal(Value(false), line);
                if (name == "none" || name == "None") return literal(Value::none(), line);
                auto e = make_expr(ExprType::Name, line);
                e->name = std::move(name);
                return e;
            }
            case TokenType::String: {
                std::string s = next().value;
                while (current().type == TokenType::String) s += next().value;  // adjacent literals join
                return literal(Value(std::move(s)), line);
            }
            case TokenType::Integer: return literal(parse_integer(next().value, line), line);
            case TokenType::Float: {
                std::string digits = next().value;
                return literal(Value(std::strtod(digits.c_str(), nullptr)), line);
            }
            case TokenType::Operator:
                if (t.value == "(") {
                    next();
                    if (skip_op(")")) {
                        auto empty = make_expr(ExprType::Tuple, line);
                        return empty;
                    }
                    ExprPtr inner = parse_tuple(true);
                    expect_op(")");
                    return inner;
                }
                if (t.value == "[") return parse_list(line);
                if (t.value == "{") return parse_dict(line);
                break;
            default: break;
        }
        fail("unexpected " + quoted(t));
    }

    Value parse_integer(const std::string& digits, int line) {
        int base = 10;
        size_t skip = 0;
        if (digits.size() > 2 && digits[0] == '0') {
            char b = digits[1];
            base = b == 'b' ? 2 : b == 'o' ? 8 : b == 'x' ? 16 : 10;
            if (base != 10) skip = 2;
        }
        errno = 0;
        char* end = nullptr;
        long long v = std::strtoll(digits.c_str() + skip, &end, base);
        if (errno == ERANGE) fail_at(line, "integer literal " + digits + " does not fit in 64 bits");
        return Value(static_cast<int64_t>(v));
    }

    ExprPtr parse_list(int line) {
        next();
        auto e = make_expr(ExprType::List, line);
        while (!is_op("]")) {
            if (!e->operands.empty()) {
                expect_op(",");
                if (is_op("]")) break;
            }
            e->operands.push_back(parse_expression(true));
        }
        next();
        return e;
    }

    ExprPtr parse_dict(int line) {
        next();
        auto e = make_expr(ExprType::Dict, line);
        while (!is_op("}")) {
            if (!e->operands.empty()) {
                expect_op(",");
                if (is_op("}")) break;
            }
            e->operands.push_back(parse_expression(true));
            expect_op(":");
            e->operands.push_back(parse_expression(true));
        }
        next();
        return e;
    }

    ExprPtr parse_postfix(ExprPtr node) {
        for (;;) {
            if (is_op(".") || is_op("[")) {
                node = bounded(parse_subscript(std::move(node)));
            } else if (is_op("(")) {
                node = bounded(parse_call(std::move(node)));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
        for (;;) {
            if (is_op("|")) {
                next();
                node = bounded(parse_filter(std::move(node)));
            } else if (is_name("is")) {
                node = bounded(parse_test(std::move(node)));
            } else if (is_op("(")) {
                node = bounded(parse_call(std::move(node)));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr node) {
        const Token& t = next();
        int line = t.line;
        if (t.value == ".") {
            const Token& attr = current();
            if (attr.type == TokenType::Name) {
                auto e = make_expr(ExprType::GetAttr, line);
                e->name = next().value;
                e->operands.push_back(std::move(node));
                return e;
            }
            if (attr.type == TokenType::Integer) {
                auto e = make_expr(ExprType::GetItem, line);
                e->operands.push_back(std::move(node));
                e->operands.push_back(literal(parse_integer(next().value, line), line));
                return e;
            }
            fail("expected name or number, got " + quoted(attr));
        }
        // "[": an index, or a slice with optional start, stop and step.
        ExprPtr parts[3];
        int colons = 0;
        for (;;) {
            if (is_op("]")) break;
            if (is_op(":")) {
                if (++colons > 2) fail("a slice takes at most three parts");
                next();
                continue;
            }
            if (parts[colons]) fail("expected ':' or ']' in a subscript, got " + quoted(current()));
            parts[colons] = parse_expression(true);
            if (colons == 0 && is_op(",")) fail("tuple subscripts are not supported");
        }
        next();
        if (colons == 0) {
            if (!parts[0]) fail_at(line, "expected an index inside '[]'");
            auto e = make_expr(ExprType::GetItem, line);
            e->operands.push_back(std::move(node));
            e->operands.push_back(std::move(parts[0]));
            return e;
        }
        auto e = make_expr(ExprType::Slice, line);
        e->operands.push_back(std::move(node));
        for (ExprPtr& part : parts) e->operands.push_back(std::move(part));
        return e;
    }

    // "(" args ")": positional then keyword arguments.
    void parse_args(Expr& e) {
        expect_op("(");
        bool first = true;
        while (!is_op(")")) {
            if (!first) {
                expect_op(",");
                if (is_op(")")) break;
            }
            first = false;
            if (is_op("*") || is_op("**")) fail("*args / **kwargs in calls are not supported");
            if (current().type == TokenType::Name && peek().type == TokenType::Operator && peek().value == "=") {
                std::string key = next().value;
                next();
                e.keywords.emplace_back(std::move(key), parse_expression(true));
            } else {
                if (!e.keywords.empty()) fail("positional argument after a keyword argument");
                e.operands.push_back(parse_expression(true));
            }
        }
        next();
    }

    ExprPtr parse_call(ExprPtr callee) {
        auto e = make_expr(ExprType::Call, current().line);
        e->operands.push_back(std::move(callee));
        parse_args(*e);
        return e;
    }

    // After "|" (or at the start of a filter block): name(.name)* [args].
    ExprPtr parse_filter(ExprPtr input) {
        int line = current().line;
        std::string name = expect_identifier("a filter name");
        while (is_op(".") && peek().type == TokenType::Name) {
            next();
            name += "." + next().value;
        }
        auto e = make_expr(ExprType::Filter, line);
        e->name = name;
        e->filter = find_filter(name);
        if (e->filter == nullptr) fail_at(line, "No filter named '" + name + "'.");
        e->operands.push_back(std::move(input));  // null in filter blocks: the body is the input
        if (is_op("(")) parse_args(*e);
        return e;
    }

    ExprPtr parse_test(ExprPtr input) {
        int line = next().line;  // "is"
        auto e = make_expr(ExprType::Test, line);
        e->negated = skip_name("not");
        std::string name = expect_identifier("a test name");
        while (is_op(".") && peek().type == TokenType::Name) {
            next();
            name += "." + next().value;
        }
        e->name = name;
        e->test = find_test(name);
        if (e->test == nullptr) fail_at(line, "No test named '" + name + "'.");
        e->operands.push_back(std::move(input));
        if (is_op("(")) {
            parse_args(*e);
        } else if ((current().type == TokenType::Name && !is_name("else") && !is_name("or") && !is_name("and")) ||
                   current().type == TokenType::String || current().type == TokenType::Integer ||
                   current().type == TokenType::Float || is_op("[") || is_op("{")) {
            if (is_name("is")) fail("You cannot chain multiple tests with is");
            e->operands.push_back(parse_postfix(parse_primary()));
        }
        return e;
    }

    std::vector<Token> tokens_;
    size_t pos_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
};

}  // namespace

Template parse(const std::string& source) { return Parser(tokenize(source)).run(); }

}  // namespace vllm::chat::jinja
