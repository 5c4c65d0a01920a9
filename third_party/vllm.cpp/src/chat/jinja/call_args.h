// Python-style binding of call arguments to named parameters, for the
// builtin filters, tests, methods and functions.
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "chat/jinja/value.h"

namespace vllm::chat::jinja {

class BoundArgs {
public:
    // Positional arguments fill `params` in order, then keywords by name.
    // Too many arguments or an unknown keyword: RenderError naming `function`.
    BoundArgs(const char* function, CallArgs& args, std::initializer_list<const char*> params);

    bool has(size_t i) const { return present_[i]; }
    const Value& get(size_t i) const { return values_[i]; }
    // The argument, or `fallback` when it was not given.
    Value get_or(size_t i, Value fallback) const { return present_[i] ? values_[i] : std::move(fallback); }
    // Typed access; a wrong type is a TypeError naming the parameter.
    int64_t get_int(size_t i, int64_t fallback) const;
    bool get_bool(size_t i, bool fallback) const;
    std::string get_string(size_t i, const std::string& fallback) const;

private:
    const char* function_;
    std::vector<const char*> names_;
    std::vector<Value> values_;
    std::vector<bool> present_;
};

}  // namespace vllm::chat::jinja
