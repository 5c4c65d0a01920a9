#include "chat/tool_parsers/json_list_tool_parser.h"

#include "chat/marker_scan.h"

namespace vllm::chat {

namespace {

constexpr std::string_view kFunctools = "functools[";
const std::vector<std::string_view> kGraniteMarkers = {"<|tool_call|>", "<tool_call>"};

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

ToolDelta JsonListToolParser::feed(std::string_view text) {
    ToolDelta out;
    pending_ += text;
    if (form_ == Form::Phi4Mini && state_ == State::Start) state_ = State::Text;
    while (step(out)) {
    }
    return out;
}

bool JsonListToolParser::step(ToolDelta& out) {
    switch (state_) {
        case State::Start: {
            size_t i = 0;
            while (i < pending_.size() && is_space(pending_[i])) ++i;
            prefix_ += pending_.substr(0, i);
            pending_.erase(0, i);
            if (pending_.empty()) return false;
            if (pending_[0] == '[') {
                state_ = State::InList;
                return true;
            }
            const bool marked = prefix_.find('<') != std::string::npos;
            const MarkerMatch marker = marked ? MarkerMatch{} : find_first_marker(pending_, kGraniteMarkers);
            if (marker.found() && marker.position == 0) {
                prefix_ += kGraniteMarkers[marker.marker];
                pending_.erase(0, kGraniteMarkers[marker.marker].size());
                return true;
            }
            if (!marked && partial_marker_length(pending_, kGraniteMarkers) == pending_.size()) return false;
            // Not a list: all of it is content, to the end.
            pending_.insert(0, prefix_);
            prefix_.clear();
            state_ = State::Text;
            return true;
        }
        case State::Text: {
            if (form_ == Form::Granite) {
                emit_outside_text(pending_, out);
                pending_.clear();
                return false;
            }
            const MarkerMatch marker = find_first_marker(pending_, {kFunctools});
            if (!marker.found()) {
                const size_t keep = partial_marker_length(pending_, {kFunctools});
                emit_outside_text(std::string_view(pending_).substr(0, pending_.size() - keep), out);
                pending_.erase(0, pending_.size() - keep);
                return false;
            }
            emit_outside_text(std::string_view(pending_).substr(0, marker.position), out);
            prefix_ = "functools";
            pending_.erase(0, marker.position + kFunctools.size() - 1);  // keeps the "["
            state_ = State::InList;
            return true;
        }
        case State::InList: {
            const size_t length = list_scan_.bracketed_length(pending_);
            if (length == std::string::npos) return false;
            end_list(length, out);
            state_ = State::Text;
            return true;
        }
    }
    return false;
}

void JsonListToolParser::end_list(size_t length, ToolDelta& out) {
    const std::string list = pending_.substr(0, length);
    pending_.erase(0, length);
    const std::optional<json::Value> parsed = try_parse_json(list);
    bool all_calls = parsed && parsed->is_array() && parsed->size() > 0;
    if (all_calls) {
        for (const json::Value& call : parsed->items()) {
            const json::Value* name = call.is_object() ? call.find("name") : nullptr;
            all_calls = all_calls && name != nullptr && name->is_string() && !name->as_string().empty() &&
                        (call.contains("arguments") || form_ == Form::Phi4Mini);
        }
    }
    if (!all_calls) {
        emit_content(prefix_ + list, out);
    } else {
        for (const json::Value& call : parsed->items()) {
            const json::Value* arguments = call.find("arguments");
            if (arguments == nullptr) arguments = call.find("parameters");
            emit_call(call.find("name")->as_string(), arguments != nullptr ? *arguments : json::Value::object(), out);
        }
    }
    prefix_.clear();
}

void JsonListToolParser::finish_markup(ToolDelta& out) {
    if (state_ == State::InList) {
        emit_content(prefix_ + pending_, out);
    } else {
        emit_outside_text(prefix_ + pending_, out);
    }
    prefix_.clear();
    pending_.clear();
}

}  // namespace vllm::chat
