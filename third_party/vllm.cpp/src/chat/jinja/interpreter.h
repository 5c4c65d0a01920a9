// Renders a parsed template: walks the statements, evaluates expressions,
// keeps jinja2's scoping (a for-loop iteration, a macro call and a with
// block get their own scope; if does not), and the `loop` variable.
// Runtime errors carry the line of the statement that raised them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/ast.h"
#include "util/recursion_budget.h"

namespace vllm::chat::jinja {

// Variables of one scope; lookups walk out through the parents.
struct Scope {
    std::vector<std::pair<std::string, Value>> vars;
    std::shared_ptr<Scope> parent;

    const Value* find(std::string_view name) const;
    void set(const std::string& name, Value v);
};

// Work limits that stop a runaway template with an error instead of a hang.
constexpr RecursionLimit kMacroCalls{"a macro call", 200};
// Statements and expressions evaluate recursively (the parser bounds their
// nesting; macro calls multiply it): the stack is what really bounds this.
constexpr RecursionLimit kEvaluation{"the evaluation of a block or expression", 100000};
constexpr int64_t kMaxSteps = 20'000'000;  // loop iterations + macro calls in one render

struct Interpreter {
    explicit Interpreter(std::shared_ptr<Scope> globals) : scope(std::move(globals)) {}
    ~Interpreter();
    Interpreter(const Interpreter&) = delete;
    Interpreter& operator=(const Interpreter&) = delete;

    std::string render(const Template& tmpl);

    Value eval(const Expr& e);
    // Runs statements, writing to `out`; a Break/Continue stops the body.
    enum class Flow { Normal, Break, Continue };
    Flow exec_body(const Body& body);
    // Renders `body` in `body_scope` into a string (macro and caller bodies).
    std::string render_body(const Body& body, std::shared_ptr<Scope> body_scope);

    Value call(const Value& callee, CallArgs& args);
    void count_step();

    std::string* out = nullptr;
    std::shared_ptr<Scope> scope;
    int call_depth = 0;  // macro and caller() calls open
    int depth = 0;       // exec() and eval() steps open
    int64_t steps = 0;
    // Scopes a macro or call block closes over. A macro is stored in the
    // scope it closes over, a reference cycle: the render's end breaks it.
    std::vector<std::shared_ptr<Scope>> closures;

private:
    Flow exec(const Stmt& s);
    Flow exec_if(const Stmt& s);
    Flow exec_for(const Stmt& s);
    void exec_set(const Stmt& s);
    void exec_call_block(const Stmt& s);
    Value apply_filters(const std::vector<ExprPtr>& filters, Value input);
    Value eval_call(const Expr& e);
    void eval_args(const Expr& e, size_t first, CallArgs& args);
};

}  // namespace vllm::chat::jinja
