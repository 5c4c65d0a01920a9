// Renders a matrix of chat-template cases in one process, for the Python
// conformance tests (tests/unit/test_chat_templates.py) and the benchmark.
//
//   render_chat_template CASES.jsonl [REPEATS]
//
// Each line of CASES.jsonl is an object: "template" (a file path) or
// "source" (the template text), "bos", "eos", "messages", "tools" (array or
// null), "add_generation_prompt", "kwargs" (object or null), and optionally
// "normalize": true to pass the messages through chat_request.h's
// normalize_messages first (what a chat request does to them).
// For each case one JSON line is written to stdout:
//   {"ok": true, "text": "..."}  or  {"ok": false, "error": "..."}
// With REPEATS > 0 each case is also rendered REPEATS more times and the
// line gets "us_per_render" (mean wall time of one render, microseconds).
// Exits non-zero only when the input itself cannot be read.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "chat/chat_request.h"
#include "chat/chat_template.h"
#include "util/error.h"
#include "util/json.h"

using namespace vllm;

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw_invalid_argument("cannot open " + path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

std::string string_field(const json::Value& c, const char* key) {
    const json::Value* v = c.find(key);
    return v != nullptr && v->is_string() ? v->as_string() : "";
}

const json::Value& field_or_null(const json::Value& c, const char* key) {
    static const json::Value kNull;
    const json::Value* v = c.find(key);
    return v != nullptr ? *v : kNull;
}

json::Value run_case(const json::Value& c, std::map<std::string, std::string>& sources, long repeats) {
    json::Value result = json::Value::object();
    try {
        std::string source;
        if (const json::Value* path = c.find("template")) {
            auto found = sources.find(path->as_string());
            if (found == sources.end()) found = sources.emplace(path->as_string(), read_file(path->as_string())).first;
            source = found->second;
        } else {
            source = string_field(c, "source");
        }
        chat::ChatTemplate tmpl(source, string_field(c, "bos"), string_field(c, "eos"));
        json::Value messages = field_or_null(c, "messages");
        const json::Value* normalize = c.find("normalize");
        if (normalize != nullptr && normalize->is_bool() && normalize->as_bool())
            messages = chat::normalize_messages(messages);
        const json::Value* agp = c.find("add_generation_prompt");
        bool add_generation_prompt = agp != nullptr && agp->is_bool() && agp->as_bool();
        const json::Value& tools = field_or_null(c, "tools");
        const json::Value& kwargs = field_or_null(c, "kwargs");
        std::string text = tmpl.render(messages, tools, add_generation_prompt, kwargs);
        result.set("ok", true);
        result.set("text", text);
        if (repeats > 0) {
            auto start = std::chrono::steady_clock::now();
            for (long i = 0; i < repeats; ++i) text = tmpl.render(messages, tools, add_generation_prompt, kwargs);
            double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
            result.set("us_per_render", us / static_cast<double>(repeats));
        }
    } catch (const Error& e) {
        result.set("ok", false);
        result.set("error", e.what());
    }
    return result;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s CASES.jsonl [REPEATS]\n", argv[0]);
        return 2;
    }
    long repeats = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 0;
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot open %s\n", argv[1]);
        return 2;
    }
    std::map<std::string, std::string> sources;
    std::string line;
    size_t line_number = 0;
    while (std::getline(in, line)) {
        ++line_number;
        if (line.empty()) continue;
        json::Value c;
        try {
            c = json::parse(line);
        } catch (const Error& e) {
            std::fprintf(stderr, "%s line %zu: %s\n", argv[1], line_number, e.what());
            return 2;
        }
        std::cout << json::dump(run_case(c, sources, repeats)) << '\n';
    }
    return 0;
}
