// The recursion budget (util/recursion_budget.h) and every recursive walk
// that goes through it: each entry point is driven past its limit at depths
// 10^3 to 10^6, on the main thread and on threads with small stacks, and
// must refuse with INVALID_ARGUMENT "... nested too deeply (limit N ..."
// rather than run out of stack. A crash here is a stack overflow.
#include <pthread.h>

#include <functional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "chat/tool_parsers/python_calls.h"
#include "check.h"
#include "structured/json_schema.h"
#include "structured/structured_output.h"
#include "util/error.h"
#include "util/json.h"
#include "util/recursion_budget.h"

using namespace vllm;

namespace {

const int kDepths[] = {1000, 10000, 100000, 1000000};

std::string repeat(const std::string& s, size_t n) {
    std::string out;
    out.reserve(s.size() * n);
    for (size_t i = 0; i < n; ++i) out += s;
    return out;
}

// Sanitizers' frames are a few times larger: the small threads are too.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr size_t kStackScale = 4;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr size_t kStackScale = 4;
#else
constexpr size_t kStackScale = 1;
#endif
#else
constexpr size_t kStackScale = 1;
#endif

// Runs `fn` on a thread of its own with a stack of `stack_bytes` (scaled
// under sanitizers).
void on_thread(size_t stack_bytes, const std::function<void()>& fn) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, stack_bytes * kStackScale);
    pthread_t thread;
    auto trampoline = [](void* arg) -> void* {
        (*static_cast<const std::function<void()>*>(arg))();
        return nullptr;
    };
    const int rc = pthread_create(&thread, &attr, trampoline, const_cast<std::function<void()>*>(&fn));
    pthread_attr_destroy(&attr);
    check(rc == 0, "pthread_create");
    if (rc == 0) pthread_join(thread, nullptr);
}

// The error `fn` throws ("" when it returns).
std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.status() == VLLM_ERR_INVALID_ARGUMENT ? e.what() : "(not INVALID_ARGUMENT) " + std::string(e.what());
    }
    return "";
}

void expect_refused(const std::string& error, const std::string& what) {
    const bool ok = error.find("nested too deeply (limit ") != std::string::npos;
    check(ok, what + ": " + (error.empty() ? "accepted" : error.substr(0, 300)));
}

// Recursion of one guard level per call, `levels` deep.
int descend(const RecursionLimit& limit, int& depth, int levels) {
    const RecursionGuard guard(limit, depth);
    volatile char frame[256] = {};  // a realistic frame, kept by volatile
    return levels == 0 ? frame[0] : descend(limit, depth, levels - 1) + frame[1];
}

void test_guard() {
    static constexpr RecursionLimit kCapped{"the test walk", 50};
    int depth = 0;
    check(error_of([&] { descend(kCapped, depth, 49); }).empty(), "within the cap");
    const std::string capped = error_of([&] { descend(kCapped, depth, 100); });
    check(capped == "the test walk is nested too deeply (limit 50 levels)", "cap message: " + capped);
    check(depth == 0, "depth restored after a refusal");

    // A cap the stack cannot hold: the stack check refuses first, on the
    // main thread and on small threads alike, and says so.
    static constexpr RecursionLimit kUncapped{"the deep walk", 1 << 30};
    const std::string main_thread = error_of([&] { descend(kUncapped, depth, 1 << 29); });
    expect_refused(main_thread, "main thread stack");
    check(main_thread.find("KiB stack allows") != std::string::npos, "stack message: " + main_thread);
    for (size_t stack : {size_t(128) << 10, size_t(256) << 10, size_t(1) << 20}) {
        on_thread(stack, [&] {
            int thread_depth = 0;
            const size_t remaining = remaining_stack();
            check(remaining > 0 && remaining < stack * kStackScale, "remaining_stack within the thread's stack");
            const std::string e = error_of([&] { descend(kUncapped, thread_depth, 1 << 29); });
            expect_refused(e, "small thread stack " + std::to_string(stack));
            check(thread_depth == 0, "thread depth restored");
        });
    }
}

// One entry point: builds the input for a depth and runs the walk on it.
struct EntryPoint {
    std::string name;
    std::function<void(int)> run;
};

json::Value nested_value(int depth) {
    json::Value v = json::Value::array();
    for (int i = 0; i < depth; ++i) {
        json::Value outer = json::Value::array();
        outer.push_back(std::move(v));
        v = std::move(outer);
    }
    return v;
}

std::string ref_chain_schema(int depth) {
    std::string defs;
    defs.reserve(static_cast<size_t>(depth) * 40);
    for (int i = 0; i < depth; ++i)
        defs += "\"d" + std::to_string(i) + "\":{\"$ref\":\"#/$defs/d" + std::to_string(i + 1) + "\"},";
    defs += "\"d" + std::to_string(depth) + "\":{\"type\":\"string\"}";
    return "{\"$defs\":{" + defs + "},\"$ref\":\"#/$defs/d0\"}";
}

std::vector<EntryPoint> entry_points() {
    const auto n = [](int d) { return static_cast<size_t>(d); };
    return {
        {"json::parse arrays", [=](int d) { json::parse(repeat("[", n(d)) + repeat("]", n(d))); }},
        {"json::parse objects", [=](int d) { json::parse(repeat("{\"a\":", n(d)) + "1" + repeat("}", n(d))); }},
        {"GBNF groups", [=](int d) {
             structured::compile_gbnf("root ::= " + repeat("(", n(d)) + "\"a\"" + repeat(")", n(d)) + "\n");
         }},
        {"regex groups", [=](int d) { structured::compile_regex(repeat("(", n(d)) + "a" + repeat(")", n(d))); }},
        {"JSON schema pattern groups", [=](int d) {
             json::Value schema = json::Value::object();
             schema.set("type", "string");
             schema.set("pattern", repeat("(", n(d)) + "a" + repeat(")", n(d)));
             structured::compile_json_schema(json::dump(schema));
         }},
        {"JSON schema $ref chain", [=](int d) { structured::compile_json_schema(ref_chain_schema(d)); }},
        {"JSON schema nested items", [=](int d) {
             structured::compile_json_schema(repeat("{\"items\":", n(d)) + "{}" + repeat("}", n(d)));
         }},
        {"chat template blocks", [=](int d) {
             chat::ChatTemplate(repeat("{% if true %}", n(d)) + "x" + repeat("{% endif %}", n(d)), "", "");
         }},
        {"chat template parentheses", [=](int d) {
             chat::ChatTemplate("{{ " + repeat("(", n(d)) + "1" + repeat(")", n(d)) + " }}", "", "");
         }},
        {"chat template filter chain", [=](int d) {
             chat::ChatTemplate("{{ 'a'" + repeat("|upper", n(d)) + " }}", "", "");
         }},
        {"chat template macro recursion", [=](int d) {
             chat::ChatTemplate t("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(" +
                                      std::to_string(d) + ") }}",
                                  "", "");
             t.render(json::Value::array(), json::Value(), false, json::Value());
         }},
        {"chat template value nesting", [=](int d) {
             // Loops of at most 1,000 (the sandbox bounds a range), d + 1 levels in all.
             chat::ChatTemplate t("{% set ns = namespace(x=1) %}{% for i in range(" + std::to_string(d / 1000 + 1) +
                                      ") %}{% for j in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}{% endfor %}"
                                      "{{ ns.x }}",
                                  "", "");
             t.render(json::Value::array(), json::Value(), false, json::Value());
         }},
    };
}

// Every entry point at every depth up to `max_depth` on this thread:
// refused, no crash.
void drive_entry_points(const std::string& thread, int max_depth) {
    for (const EntryPoint& entry : entry_points())
        for (int depth : kDepths)
            if (depth <= max_depth)
                expect_refused(error_of([&] { entry.run(depth); }),
                               entry.name + " at depth " + std::to_string(depth) + " on " + thread);
}

void test_entry_points() {
    drive_entry_points("the main thread", 1000000);
    // 10^6 differs from 10^5 only in the input's size (each walk is refused
    // at the same level), and the 10^6 $ref chain takes seconds to parse.
    on_thread(256 << 10, [] { drive_entry_points("a 256 KiB thread", 100000); });
    on_thread(128 << 10, [] { drive_entry_points("a 128 KiB thread", 100000); });
}

// Walks whose refusal is not an error to the user.
void test_other_walks() {
    // Writing a value built in code (no parse bound): deep values are built
    // and freed on the main thread, written on a small one.
    const json::Value deep = nested_value(10000);  // freeing it recurses too: not deeper
    const json::Value deep_copy = deep;
    on_thread(128 << 10, [&] {
        expect_refused(error_of([&] { json::dump(deep); }), "json::dump 10,000 deep");
        expect_refused(error_of([&] { (void)(deep == deep_copy); }), "json == 10,000 deep");
    });
    check(json::dump(nested_value(100)).size() == 202, "json::dump within the bound");

    // The pythonic tool-call reader: too deep is no call list (the text stays content).
    for (int depth : kDepths) {
        const auto n = static_cast<size_t>(depth);
        const std::string text = "[f(a=" + repeat("[", n) + repeat("]", n) + ")]";
        on_thread(256 << 10, [&] {
            check(!chat::parse_python_call_list(text).has_value(),
                  "python call literal at depth " + std::to_string(depth) + " is no call list");
        });
    }
    check(chat::parse_python_call_list("[f(a=[[1]])]").has_value(), "python call literal within the bound");
}

// Inputs just within every fixed cap, on small threads: each either works
// or is refused by the stack check; none may crash (freeing a deep AST or
// value recurses too, without a guard of its own).
void test_deepest_allowed_inputs_on_small_threads() {
    const std::vector<std::function<void()>> deepest = {
        [] { json::parse(repeat("[", 256) + repeat("]", 256)); },
        [] { json::parse(repeat("{\"a\":", 256) + "1" + repeat("}", 256)); },
        [] { structured::compile_regex(repeat("(", 256) + "a" + repeat(")", 256)); },
        [] { structured::compile_gbnf("root ::= " + repeat("(", 256) + "\"a\"" + repeat(")", 256) + "\n"); },
        [] { structured::compile_json_schema(ref_chain_schema(999)); },
        [] {
            chat::ChatTemplate t("{{ 'a'" + repeat("|upper", 999) + " }}", "", "");
            t.render(json::Value::array(), json::Value(), false, json::Value());
        },
        [] {
            chat::ChatTemplate t("{{ 1" + repeat(" + 1", 998) + " }}", "", "");
            t.render(json::Value::array(), json::Value(), false, json::Value());
        },
        [] {
            chat::ChatTemplate t(repeat("{% if true %}", 199) + "x" + repeat("{% endif %}", 199), "", "");
            t.render(json::Value::array(), json::Value(), false, json::Value());
        },
        [] {
            chat::ChatTemplate t("{% set ns = namespace(x=1) %}{% for i in range(999) %}{% set ns.x = [ns.x] %}"
                                 "{% endfor %}{{ ns.x == ns.x }}{{ ns.x | tojson }}"
                                 "{{ ns.x | tojson(sort_keys=true) }}{{ ns.x }}",
                                 "", "");
            t.render(json::Value::array(), json::Value(), false, json::Value());
        },
        [] {
            chat::ChatTemplate t("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(199) }}",
                                 "", "");
            t.render(json::Value::array(), json::Value(), false, json::Value());
        },
    };
    for (size_t stack : {size_t(128) << 10, size_t(256) << 10}) {
        on_thread(stack, [&] {
            for (size_t i = 0; i < deepest.size(); ++i) {
                const std::string e = error_of(deepest[i]);
                check(e.empty() || e.find("nested too deeply") != std::string::npos,
                      "deepest allowed input " + std::to_string(i) + " on " + std::to_string(stack >> 10) +
                          " KiB: " + e);
            }
        });
    }
}

// Shallow inputs still work on a small thread (the limits are not too tight).
void test_within_limits_on_small_threads() {
    on_thread(256 << 10, [] {
        check(error_of([] { json::parse(repeat("[", 200) + repeat("]", 200)); }).empty(), "json 200 deep on 256 KiB");
        check(error_of([] { structured::compile_regex(repeat("(", 100) + "a" + repeat(")", 100)); }).empty(),
              "regex 100 groups on 256 KiB");
        check(error_of([] { structured::compile_json_schema(ref_chain_schema(50)); }).empty(),
              "schema $ref chain of 50 on 256 KiB");
        check(error_of([] {
                  chat::ChatTemplate t("{% for m in messages %}{{ m.role }}: {{ m.content }}{% endfor %}", "", "");
                  json::Value messages = json::parse(R"([{"role": "user", "content": "hi"}])");
                  check(t.render(messages, json::Value(), true, json::Value()) == "user: hi", "template renders");
              }).empty(),
              "a chat template on 256 KiB");
    });
}

void test_non_recursive_blowups() {
    // A $ref cycle with nothing in between: refused (left recursion), no hang.
    const std::string cycle =
        R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})";
    check(!error_of([&] { structured::compile_json_schema(cycle); }).empty(), "$ref cycle refused");
    // A $ref DAG each level of which uses the next twice: compiled once per definition.
    const auto with_defs = [](const std::string& defs) {
        return "{\"$defs\":{" + defs + "},\"$ref\":\"#/$defs/d0\"}";
    };
    const auto ref = [](int i) { return "{\"$ref\":\"#/$defs/d" + std::to_string(i) + "\"}"; };
    std::string defs;
    for (int i = 0; i < 60; ++i)
        defs += "\"d" + std::to_string(i) + "\":{\"type\":\"array\",\"prefixItems\":[" + ref(i + 1) + "," + ref(i + 1) +
                "]},";
    defs += "\"d60\":{\"type\":\"integer\"}";
    check(error_of([&] { structured::compile_json_schema(with_defs(defs)); }).empty(),
          "a $ref DAG of 2^60 paths compiles");
    // allOf inlines its parts: a chain whose every level merges the next twice expands exponentially.
    defs.clear();
    for (int i = 0; i < 40; ++i) {
        const std::string next = "{\"allOf\":[" + ref(i + 1) + "]}";
        defs += "\"d" + std::to_string(i) + "\":{\"type\":\"object\",\"properties\":{\"x\":" + next + ",\"y\":" + next +
                "}},";
    }
    defs += "\"d40\":{\"type\":\"object\"}";
    const std::string expansion = error_of([&] { structured::compile_json_schema(with_defs(defs)); });
    check(expansion.find("expands to more than") != std::string::npos, "allOf expansion refused: " + expansion);
}

}  // namespace

int main() {
    test_guard();
    test_entry_points();
    test_other_walks();
    test_within_limits_on_small_threads();
    test_deepest_allowed_inputs_on_small_threads();
    test_non_recursive_blowups();
    return report();
}
