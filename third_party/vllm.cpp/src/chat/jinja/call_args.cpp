#include "chat/jinja/call_args.h"

#include "chat/jinja/error.h"

namespace vllm::chat::jinja {

BoundArgs::BoundArgs(const char* function, CallArgs& args, std::initializer_list<const char*> params)
    : function_(function), names_(params), values_(params.size()), present_(params.size(), false) {
    if (args.positional.size() > params.size())
        throw_render_error(std::string(function) + "() takes at most " + std::to_string(params.size()) +
                           " argument(s) (" + std::to_string(args.positional.size()) + " given)");
    for (size_t i = 0; i < args.positional.size(); ++i) {
        values_[i] = std::move(args.positional[i]);
        present_[i] = true;
    }
    for (auto& keyword : args.keywords) {
        size_t i = 0;
        while (i < names_.size() && keyword.first != names_[i]) ++i;
        if (i == names_.size())
            throw_render_error(std::string(function) + "() got an unexpected keyword argument '" + keyword.first + "'");
        if (present_[i])
            throw_render_error(std::string(function) + "() got multiple values for argument '" + keyword.first + "'");
        values_[i] = std::move(keyword.second);
        present_[i] = true;
    }
}

int64_t BoundArgs::get_int(size_t i, int64_t fallback) const {
    if (!present_[i]) return fallback;
    const Value& v = values_[i];
    if (!v.is_int() && !v.is_bool())
        throw_render_error(std::string(function_) + "(): '" + names_[i] + "' must be an integer, not " + v.type_name());
    return v.as_int();
}

bool BoundArgs::get_bool(size_t i, bool fallback) const { return present_[i] ? truthy(values_[i]) : fallback; }

std::string BoundArgs::get_string(size_t i, const std::string& fallback) const {
    if (!present_[i]) return fallback;
    const Value& v = values_[i];
    if (!v.is_string())
        throw_render_error(std::string(function_) + "(): '" + names_[i] + "' must be a string, not " + v.type_name());
    return v.as_string();
}

}  // namespace vllm::chat::jinja
