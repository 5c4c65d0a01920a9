#include "chat/jinja/interpreter.h"

#include "chat/jinja/error.h"
#include "chat/jinja/loop_context.h"
#include "chat/jinja/operators.h"
#include "util/recursion_budget.h"

namespace vllm::chat::jinja {

const Value* Scope::find(std::string_view name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent.get())
        for (const auto& var : s->vars)
            if (var.first == name) return &var.second;
    return nullptr;
}

void Scope::set(const std::string& name, Value v) {
    for (auto& var : vars) {
        if (var.first == name) {
            var.second = std::move(v);
            return;
        }
    }
    vars.emplace_back(name, std::move(v));
}

namespace {

std::shared_ptr<Scope> child_of(const std::shared_ptr<Scope>& parent) {
    auto s = std::make_shared<Scope>();
    s->parent = parent;
    return s;
}

// Restores the interpreter's scope and output when a nested render ends.
struct Frame {
    Frame(Interpreter& interp, std::shared_ptr<Scope> scope, std::string* out)
        : interp(interp), saved_scope(std::move(interp.scope)), saved_out(interp.out) {
        interp.scope = std::move(scope);
        interp.out = out;
    }
    ~Frame() {
        interp.scope = std::move(saved_scope);
        interp.out = saved_out;
    }
    Interpreter& interp;
    std::shared_ptr<Scope> saved_scope;
    std::string* saved_out;
};

// A macro's or a call block's parameters bound Python-style; extra
// positional arguments go to `varargs`, unknown keywords to `kwargs`.
void bind_parameters(Interpreter& interp, const Stmt& def, CallArgs& args, Scope& scope) {
    const std::vector<std::string>& params = def.params;
    std::vector<bool> bound(params.size(), false);
    List varargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
        if (i < params.size()) {
            scope.set(params[i], std::move(args.positional[i]));
            bound[i] = true;
        } else {
            varargs.push_back(std::move(args.positional[i]));
        }
    }
    Dict kwargs;
    for (auto& keyword : args.keywords) {
        size_t i = 0;
        while (i < params.size() && params[i] != keyword.first) ++i;
        if (i == params.size()) {
            if (keyword.first == "caller") {
                scope.set("caller", std::move(keyword.second));
            } else {
                kwargs.set(keyword.first, std::move(keyword.second));
            }
            continue;
        }
        if (bound[i]) throw_render_error("macro got multiple values for argument '" + keyword.first + "'");
        scope.set(params[i], std::move(keyword.second));
        bound[i] = true;
    }
    for (size_t i = 0; i < params.size(); ++i) {
        if (bound[i]) continue;
        // Defaults are evaluated at call time, seeing the parameters before them.
        scope.set(params[i], def.defaults[i] ? interp.eval(*def.defaults[i])
                                             : Value::undefined("parameter '" + params[i] + "' was not provided"));
    }
    scope.set("varargs", Value(std::move(varargs), true));
    scope.set("kwargs", Value(std::move(kwargs)));
}

}  // namespace

Interpreter::~Interpreter() {
    for (const std::shared_ptr<Scope>& s : closures) s->vars.clear();
}

namespace {

class Macro : public Object {
public:
    Macro(const Stmt& def, std::shared_ptr<Scope> closure) : def_(def), closure_(std::move(closure)) {}
    const char* type_name() const override { return "Macro"; }
    bool is_callable() const override { return true; }
    Value call(Interpreter& interp, CallArgs& args) override {
        const RecursionGuard guard(kMacroCalls, interp.call_depth, [this](const std::string& why) {
            throw_render_error("macro '" + def_.targets[0] + "': " + why);
        });
        interp.count_step();
        auto scope = child_of(closure_);
        {
            Frame frame(interp, scope, interp.out);  // defaults evaluate in the macro's scope
            bind_parameters(interp, def_, args, *scope);
        }
        return Value(interp.render_body(def_.bodies[0], scope));
    }
    std::string str() const override { return "<Macro '" + def_.targets[0] + "'>"; }

private:
    const Stmt& def_;
    std::shared_ptr<Scope> closure_;
};

// `caller` inside a macro invoked by {% call %}: renders the call block's body.
class Caller : public Object {
public:
    Caller(const Stmt& block, std::shared_ptr<Scope> closure) : block_(block), closure_(std::move(closure)) {}
    const char* type_name() const override { return "Macro"; }
    bool is_callable() const override { return true; }
    Value call(Interpreter& interp, CallArgs& args) override {
        const RecursionGuard guard(kMacroCalls, interp.call_depth,
                                   [](const std::string& why) { throw_render_error("caller(): " + why); });
        auto scope = child_of(closure_);
        {
            Frame frame(interp, scope, interp.out);
            bind_parameters(interp, block_, args, *scope);
        }
        return Value(interp.render_body(block_.bodies[0], scope));
    }
    std::string str() const override { return "<Macro 'caller'>"; }

private:
    const Stmt& block_;
    std::shared_ptr<Scope> closure_;
};

void unpack_into(Scope& scope, const std::vector<std::string>& targets, const Value& v) {
    if (targets.size() == 1) {
        scope.set(targets[0], v);
        return;
    }
    List items = iterate(v);
    if (items.size() != targets.size()) {
        if (items.size() > targets.size())
            throw_render_error("too many values to unpack (expected " + std::to_string(targets.size()) + ")");
        throw_render_error("not enough values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                           std::to_string(items.size()) + ")");
    }
    for (size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], std::move(items[i]));
}

}  // namespace

void Interpreter::count_step() {
    if (++steps > kMaxSteps)
        throw_render_error("template exceeded " + std::to_string(kMaxSteps) + " loop iterations and macro calls");
}

std::string Interpreter::render(const Template& tmpl) {
    std::string result;
    out = &result;
    exec_body(tmpl.body);
    return result;
}

std::string Interpreter::render_body(const Body& body, std::shared_ptr<Scope> body_scope) {
    std::string result;
    Frame frame(*this, std::move(body_scope), &result);
    exec_body(body);
    return result;
}

Interpreter::Flow Interpreter::exec_body(const Body& body) {
    for (const StmtPtr& s : body) {
        Flow flow = exec(*s);
        if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s) {
    try {
        const RecursionGuard guard(kEvaluation, depth, throw_render_error);
        switch (s.type) {
            case StmtType::Text: out->append(s.text); break;
            case StmtType::Print: append_str(*out, eval(*s.exprs[0])); break;
            case StmtType::If: return exec_if(s);
            case StmtType::For: return exec_for(s);
            case StmtType::Set: exec_set(s); break;
            case StmtType::SetBlock: {
                Value rendered(render_body(s.bodies[0], child_of(scope)));
                scope->set(s.targets[0], apply_filters(s.exprs, std::move(rendered)));
                break;
            }
            case StmtType::Macro:
                closures.push_back(scope);
                scope->set(s.targets[0], Value(std::make_shared<Macro>(s, scope)));
                break;
            case StmtType::CallBlock: exec_call_block(s); break;
            case StmtType::FilterBlock: {
                Value rendered(render_body(s.bodies[0], child_of(scope)));
                append_str(*out, apply_filters(s.exprs, std::move(rendered)));
                break;
            }
            case StmtType::With: {
                auto inner = child_of(scope);
                for (size_t i = 0; i < s.targets.size(); ++i) inner->set(s.targets[i], eval(*s.exprs[i]));
                Frame frame(*this, inner, out);
                return exec_body(s.bodies[0]);
            }
            case StmtType::Generation: {
                Frame frame(*this, child_of(scope), out);
                return exec_body(s.bodies[0]);
            }
            case StmtType::Break: return Flow::Break;
            case StmtType::Continue: return Flow::Continue;
        }
        // Each piece is bounded, but a loop may append many: bound the whole.
        if (out->size() > kMaxResultBytes)
            throw_render_error("rendered output exceeds the template engine's limit of " +
                               std::to_string(kMaxResultBytes) + " bytes");
    } catch (RenderError& e) {
        if (e.line == 0) e.line = s.line;
        throw;
    }
    return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_if(const Stmt& s) {
    for (size_t i = 0; i < s.exprs.size(); ++i)
        if (truthy(eval(*s.exprs[i]))) return exec_body(s.bodies[i]);
    if (s.has_else) return exec_body(s.bodies.back());
    return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s) {
    List items = iterate(eval(*s.exprs[0]));
    if (s.exprs[1]) {
        // The loop filter sees each candidate bound to the loop targets.
        List kept;
        for (Value& item : items) {
            count_step();
            auto probe = child_of(scope);
            unpack_into(*probe, s.targets, item);
            Frame frame(*this, probe, out);
            if (truthy(eval(*s.exprs[1]))) kept.push_back(std::move(item));
        }
        items = std::move(kept);
    }
    if (items.empty()) {
        // break/continue in the else body belong to an enclosing loop.
        return s.has_else ? exec_body(s.bodies[1]) : Flow::Normal;
    }
    auto loop = std::make_shared<LoopContext>(std::move(items));
    Value loop_value{std::shared_ptr<Object>(loop)};
    const List& loop_items = loop->items();
    for (size_t i = 0; i < loop_items.size(); ++i) {
        count_step();
        loop->advance_to(i);
        // Each iteration starts from the enclosing scope: assignments in the
        // body are not seen by the next iteration or after the loop.
        auto iteration = child_of(scope);
        unpack_into(*iteration, s.targets, loop_items[i]);
        iteration->set("loop", loop_value);
        Frame frame(*this, std::move(iteration), out);
        if (exec_body(s.bodies[0]) == Flow::Break) break;
    }
    return Flow::Normal;
}

void Interpreter::exec_set(const Stmt& s) {
    Value v = eval(*s.exprs[0]);
    if (s.target_attr.empty()) {
        unpack_into(*scope, s.targets, v);
        return;
    }
    const Value* target = scope->find(s.targets[0]);
    if (target == nullptr || !target->is_object() || !target->as_object().set_attr(s.target_attr, std::move(v)))
        throw_render_error("cannot assign attribute on non-namespace object");
}

void Interpreter::exec_call_block(const Stmt& s) {
    const Expr& call_expr = *s.exprs[0];
    Value callee = eval(*call_expr.operands[0]);
    CallArgs args;
    eval_args(call_expr, 1, args);
    closures.push_back(scope);
    args.keywords.emplace_back("caller", Value(std::make_shared<Caller>(s, scope)));
    append_str(*out, call(callee, args));
}

Value Interpreter::apply_filters(const std::vector<ExprPtr>& filters, Value input) {
    for (const ExprPtr& f : filters) {
        CallArgs args;
        eval_args(*f, 1, args);
        input = f->filter(*this, input, args);
    }
    return input;
}

void Interpreter::eval_args(const Expr& e, size_t first, CallArgs& args) {
    args.positional.reserve(e.operands.size() - first);
    for (size_t i = first; i < e.operands.size(); ++i) args.positional.push_back(eval(*e.operands[i]));
    for (const auto& keyword : e.keywords) args.keywords.emplace_back(keyword.first, eval(*keyword.second));
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
    if (callee.is_undefined()) raise_undefined(callee);
    if (!callee.is_object() || !callee.as_object().is_callable())
        throw_render_error(std::string("'") + callee.type_name() + "' object is not callable");
    return callee.as_object().call(*this, args);
}

Value Interpreter::eval_call(const Expr& e) {
    Value callee = eval(*e.operands[0]);
    CallArgs args;
    eval_args(e, 1, args);
    return call(callee, args);
}

Value Interpreter::eval(const Expr& e) {
    const RecursionGuard guard(kEvaluation, depth, throw_render_error);
    switch (e.type) {
        case ExprType::Literal: return e.literal;
        case ExprType::Name: {
            if (const Value* v = scope->find(e.name)) return *v;
            return Value::undefined("'" + e.name + "' is undefined");
        }
        case ExprType::List:
        case ExprType::Tuple: {
            List items;
            items.reserve(e.operands.size());
            for (const ExprPtr& item : e.operands) items.push_back(eval(*item));
            return Value(std::move(items), e.type == ExprType::Tuple);
        }
        case ExprType::Dict: {
            Dict d;
            for (size_t i = 0; i + 1 < e.operands.size(); i += 2) {
                Value key = eval(*e.operands[i]);
                if (!key.is_string())
                    throw_render_error(std::string("dict keys must be strings in chat templates, not ") + key.type_name());
                d.set(key.as_string(), eval(*e.operands[i + 1]));
            }
            return Value(std::move(d));
        }
        case ExprType::GetAttr: return get_attr(eval(*e.operands[0]), e.name);
        case ExprType::GetItem: return get_item(eval(*e.operands[0]), eval(*e.operands[1]));
        case ExprType::Slice: {
            Value obj = eval(*e.operands[0]);
            auto part = [&](size_t i) { return e.operands[i] ? eval(*e.operands[i]) : Value::none(); };
            return slice(obj, part(1), part(2), part(3));
        }
        case ExprType::Call: return eval_call(e);
        case ExprType::Filter: {
            Value input = eval(*e.operands[0]);
            CallArgs args;
            eval_args(e, 1, args);
            return e.filter(*this, input, args);
        }
        case ExprType::Test: {
            Value input = eval(*e.operands[0]);
            CallArgs args;
            eval_args(e, 1, args);
            return Value(e.test(*this, input, args) != e.negated);
        }
        case ExprType::Not: return Value(!truthy(eval(*e.operands[0])));
        case ExprType::Negate: return negate(eval(*e.operands[0]), true);
        case ExprType::Plus: return negate(eval(*e.operands[0]), false);
        case ExprType::Binary: return binary(e.binary_op, eval(*e.operands[0]), eval(*e.operands[1]));
        case ExprType::And: {
            Value left = eval(*e.operands[0]);
            return truthy(left) ? eval(*e.operands[1]) : left;
        }
        case ExprType::Or: {
            Value left = eval(*e.operands[0]);
            return truthy(left) ? left : eval(*e.operands[1]);
        }
        case ExprType::Compare: {
            Value left = eval(*e.operands[0]);
            for (size_t i = 0; i < e.compare_ops.size(); ++i) {
                Value right = eval(*e.operands[i + 1]);
                if (!compare(e.compare_ops[i], left, right)) return Value(false);
                left = std::move(right);
            }
            return Value(true);
        }
        case ExprType::Condition: {
            if (truthy(eval(*e.operands[0]))) return eval(*e.operands[1]);
            if (e.operands[2]) return eval(*e.operands[2]);
            return Value::undefined("the inline if-expression evaluated to false and no else section was defined.");
        }
    }
    return Value();
}

}  // namespace vllm::chat::jinja
