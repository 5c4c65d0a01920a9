// The parsed template: expression and statement nodes. Filters and tests
// are resolved to their functions while parsing, so an unknown name fails
// at parse time with its line, as in jinja2.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/value.h"

namespace vllm::chat::jinja {

struct Interpreter;
using FilterFn = Value (*)(Interpreter& interp, const Value& input, CallArgs& args);
using TestFn = bool (*)(Interpreter& interp, const Value& input, CallArgs& args);

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprType {
    Literal,    // literal
    Name,       // name
    List,       // operands: items
    Tuple,      // operands: items
    Dict,       // operands: key, value, key, value...
    GetAttr,    // operands[0].name
    GetItem,    // operands[0][operands[1]]
    Slice,      // operands[0][operands[1]:operands[2]:operands[3]] (null = omitted)
    Call,       // operands[0](operands[1..], keywords)
    Filter,     // operands[0] | name(operands[1..], keywords)
    Test,       // operands[0] is [not] name(operands[1..], keywords)
    Not,        // not operands[0]
    Negate,     // -operands[0]
    Plus,       // +operands[0]
    Binary,     // operands[0] op operands[1]
    And,        // short-circuit
    Or,         // short-circuit
    Compare,    // operands[0] ops[0] operands[1] ops[1] operands[2]... (Python chaining)
    Condition,  // operands[1] if operands[0] else operands[2] (absent else: Undefined)
};

enum class BinaryOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Concat };
enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Expr {
    ExprType type;
    int line;
    Value literal;
    std::string name;
    std::vector<ExprPtr> operands;
    std::vector<std::pair<std::string, ExprPtr>> keywords;
    BinaryOp binary_op = BinaryOp::Add;
    std::vector<CompareOp> compare_ops;
    FilterFn filter = nullptr;
    TestFn test = nullptr;
    bool negated = false;  // `is not`
    // Levels of nodes from here down (1: no operands), kept by the parser so
    // that a long chain of operators (`x|f|f|...`, `1+1+...`), which it
    // builds without recursing, cannot make a tree that evaluating or
    // destroying it (both recursive) would overflow the stack with.
    int height = 1;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtType {
    Text,         // text
    Print,        // {{ exprs[0] }}
    If,           // exprs: conditions; bodies: one per condition, plus else when present
    For,          // targets in exprs[0] [if exprs[1]]; bodies[0] loop, bodies[1] else
    Set,          // targets (or name.attr in target_attr) = exprs[0]
    SetBlock,     // targets[0] = rendered bodies[0], through the filters in exprs
    Macro,        // name(params with defaults in exprs) bodies[0]
    CallBlock,    // exprs[0] is the call; params: the caller's; bodies[0] the caller body
    FilterBlock,  // bodies[0] rendered through the filters in exprs
    With,         // targets = exprs; bodies[0]
    Break,
    Continue,
    Generation,   // transformers' {% generation %}: renders its body
};

struct Stmt {
    StmtType type;
    int line;
    std::string text;
    std::vector<ExprPtr> exprs;
    std::vector<Body> bodies;
    std::vector<std::string> targets;  // assigned names (for/set/with), or the macro's name
    std::string target_attr;           // `set ns.attr = ...`: targets[0] is ns
    std::vector<std::string> params;   // macro / caller parameters
    std::vector<ExprPtr> defaults;     // aligned with params; null = no default
    bool has_else = false;
};

// A parsed template; the AST lives as long as the Template.
struct Template {
    Body body;
};

}  // namespace vllm::chat::jinja
