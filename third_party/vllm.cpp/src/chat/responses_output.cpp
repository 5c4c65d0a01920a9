// The Responses API's response object and events from the chat road's
// output (responses_output.h says the shape).
#include "chat/responses_output.h"

#include <utility>

#include "util/json_fields.h"

namespace vllm::chat {

namespace {

json::Value text_part(const char* type, const std::string& text) {
    json::Value part = json::Value::object();
    part.set("type", type);
    if (std::string(type) == "output_text") part.set("annotations", json::Value::array());
    part.set("text", text);
    if (std::string(type) == "output_text") part.set("logprobs", json::Value::array());
    return part;
}

const std::string* string_field(const json::Value& object, const char* key) {
    const json::Value* value = json::field(object, key);
    return value != nullptr && value->is_string() ? &value->as_string() : nullptr;
}

}  // namespace

ResponsesWriter::ResponsesWriter(json::Value echo, json::Value conversation, std::string id, int64_t created_at)
    : echo_(std::move(echo)), conversation_(std::move(conversation)), id_(std::move(id)), created_at_(created_at) {}

std::string ResponsesWriter::item_id(const char* prefix) const {
    // Unique within the response, and across responses through its id.
    const std::string tail = id_.rfind("resp_", 0) == 0 ? id_.substr(5) : id_;
    return std::string(prefix) + tail + "_" + std::to_string(output_.size());
}

json::Value ResponsesWriter::event(const char* type, json::Value fields) {
    json::Value out = json::Value::object();
    out.set("type", type);
    for (auto& [key, value] : fields.members()) out.set(key, std::move(value));
    out.set("sequence_number", sequence_++);
    return out;
}

json::Value ResponsesWriter::response() const {
    json::Value out = json::Value::object();
    out.set("id", id_);
    out.set("object", "response");
    out.set("created_at", created_at_);
    out.set("status", status_);
    out.set("error", nullptr);
    json::Value incomplete = nullptr;
    if (status_ == "incomplete") {
        incomplete = json::Value::object();
        incomplete.set("reason", "max_output_tokens");
    }
    out.set("incomplete_details", std::move(incomplete));
    json::Value output = json::Value::array();
    for (const json::Value& item : output_) output.push_back(item);
    out.set("output", std::move(output));
    for (const auto& [key, value] : echo_.members()) out.set(key, value);
    json::Value usage = nullptr;
    if (has_usage_) {
        usage = json::Value::object();
        usage.set("input_tokens", input_tokens_);
        json::Value input_details = json::Value::object();
        input_details.set("cached_tokens", 0);
        input_details.set("cache_write_tokens", 0);
        usage.set("input_tokens_details", std::move(input_details));
        usage.set("output_tokens", output_tokens_);
        json::Value output_details = json::Value::object();
        output_details.set("reasoning_tokens", 0);
        usage.set("output_tokens_details", std::move(output_details));
        usage.set("total_tokens", input_tokens_ + output_tokens_);
    }
    out.set("usage", std::move(usage));
    return out;
}

json::Value ResponsesWriter::conversation() const {
    json::Value out = conversation_;
    for (const json::Value& item : output_) out.push_back(item);
    return out;
}

std::vector<json::Value> ResponsesWriter::opening() {
    std::vector<json::Value> events;
    json::Value fields = json::Value::object();
    fields.set("response", response());
    events.push_back(event("response.created", fields));
    events.push_back(event("response.in_progress", std::move(fields)));
    return events;
}

void ResponsesWriter::open(ItemKind kind, json::Value item, std::vector<json::Value>& events) {
    close(events);
    kind_ = kind;
    item_ = std::move(item);
    // Ids name the item's place in the output, known once the one before is closed.
    const char* prefix = kind == ItemKind::Message ? "msg_" : kind == ItemKind::Reasoning ? "rs_" : "fc_";
    item_.set("id", item_id(prefix));
    if (kind == ItemKind::FunctionCall && item_.find("call_id")->as_string().empty())
        item_.set("call_id", item_id("call_"));
    text_.clear();
    json::Value fields = json::Value::object();
    fields.set("output_index", static_cast<int64_t>(output_.size()));
    fields.set("item", item_);
    events.push_back(event("response.output_item.added", std::move(fields)));
    if (kind == ItemKind::FunctionCall) return;
    fields = open_item_fields();
    fields.set("content_index", 0);
    fields.set("part", text_part(kind == ItemKind::Message ? "output_text" : "reasoning_text", ""));
    events.push_back(event("response.content_part.added", std::move(fields)));
}

void ResponsesWriter::close(std::vector<json::Value>& events) {
    if (kind_ == ItemKind::None) return;
    const int64_t index = static_cast<int64_t>(output_.size());
    json::Value fields = open_item_fields();
    if (kind_ == ItemKind::FunctionCall) {
        item_.set("arguments", text_);
        fields.set("name", item_.find("name")->as_string());
        fields.set("arguments", text_);
        events.push_back(event("response.function_call_arguments.done", std::move(fields)));
    } else {
        const bool message = kind_ == ItemKind::Message;
        const char* part_type = message ? "output_text" : "reasoning_text";
        json::Value content = json::Value::array();
        content.push_back(text_part(part_type, text_));
        item_.set("content", std::move(content));
        fields.set("content_index", 0);
        json::Value part_fields = fields;
        fields.set("text", text_);
        if (message) fields.set("logprobs", json::Value::array());
        events.push_back(event(message ? "response.output_text.done" : "response.reasoning_text.done", std::move(fields)));
        part_fields.set("part", text_part(part_type, text_));
        events.push_back(event("response.content_part.done", std::move(part_fields)));
    }
    item_.set("status", "completed");
    json::Value done = json::Value::object();
    done.set("output_index", index);
    done.set("item", item_);
    events.push_back(event("response.output_item.done", std::move(done)));
    output_.push_back(std::move(item_));
    item_ = nullptr;
    kind_ = ItemKind::None;
    tool_index_ = -1;
}

void ResponsesWriter::add_reasoning(const std::string& text, std::vector<json::Value>& events) {
    if (text.empty()) return;
    if (kind_ != ItemKind::Reasoning) {
        json::Value item = json::Value::object();
        item.set("id", "");
        item.set("type", "reasoning");
        item.set("summary", json::Value::array());
        item.set("content", json::Value::array());
        item.set("status", "in_progress");
        open(ItemKind::Reasoning, std::move(item), events);
    }
    add_text_delta(text, events);
}

void ResponsesWriter::open_message(std::vector<json::Value>& events) {
    json::Value item = json::Value::object();
    item.set("id", "");
    item.set("type", "message");
    item.set("role", "assistant");
    item.set("status", "in_progress");
    item.set("content", json::Value::array());
    open(ItemKind::Message, std::move(item), events);
}

void ResponsesWriter::add_content(const std::string& text, std::vector<json::Value>& events) {
    if (text.empty()) return;
    if (kind_ != ItemKind::Message) open_message(events);
    add_text_delta(text, events);
}

// The open reasoning or message item's next text.
void ResponsesWriter::add_text_delta(const std::string& text, std::vector<json::Value>& events) {
    const bool message = kind_ == ItemKind::Message;
    text_ += text;
    json::Value fields = open_item_fields();
    fields.set("content_index", 0);
    fields.set("delta", text);
    if (message) fields.set("logprobs", json::Value::array());
    events.push_back(event(message ? "response.output_text.delta" : "response.reasoning_text.delta", std::move(fields)));
}

json::Value ResponsesWriter::open_item_fields() const {
    json::Value fields = json::Value::object();
    fields.set("item_id", item_.find("id")->as_string());
    fields.set("output_index", static_cast<int64_t>(output_.size()));
    return fields;
}

// A chat tool-call delta ({index, id?, function: {name?, arguments?}}): the
// first of an index opens its function_call item.
void ResponsesWriter::add_tool_call_delta(const json::Value& delta, std::vector<json::Value>& events) {
    const json::Value* index_value = json::field(delta, "index");
    const int64_t index = index_value != nullptr && index_value->is_int() ? index_value->as_int() : 0;
    const json::Value* function = json::field(delta, "function");
    const std::string* name = function != nullptr ? string_field(*function, "name") : nullptr;
    const std::string* arguments = function != nullptr ? string_field(*function, "arguments") : nullptr;
    if (kind_ != ItemKind::FunctionCall || tool_index_ != index) {
        const std::string* call_id = string_field(delta, "id");
        json::Value item = json::Value::object();
        item.set("id", "");
        item.set("type", "function_call");
        item.set("call_id", call_id != nullptr ? *call_id : "");
        item.set("name", name != nullptr ? *name : "");
        item.set("arguments", "");
        item.set("status", "in_progress");
        open(ItemKind::FunctionCall, std::move(item), events);
        tool_index_ = index;
    }
    if (arguments == nullptr || arguments->empty()) return;
    text_ += *arguments;
    json::Value fields = open_item_fields();
    fields.set("delta", *arguments);
    events.push_back(event("response.function_call_arguments.delta", std::move(fields)));
}

void ResponsesWriter::read_usage(const json::Value& usage) {
    if (!usage.is_object()) return;
    if (const json::Value* p = json::field(usage, "prompt_tokens")) input_tokens_ = p->as_int();
    if (const json::Value* c = json::field(usage, "completion_tokens")) output_tokens_ = c->as_int();
    has_usage_ = true;
}

std::vector<json::Value> ResponsesWriter::on_chunk(const json::Value& chunk) {
    std::vector<json::Value> events;
    if (sequence_ == 0) events = opening();
    if (const json::Value* usage = json::field(chunk, "usage")) read_usage(*usage);
    const json::Value* choices = json::field(chunk, "choices");
    if (choices == nullptr || !choices->is_array() || choices->items().empty()) return events;
    const json::Value& choice = choices->items()[0];  // a response has one choice
    if (const json::Value* delta = json::field(choice, "delta")) {
        if (const std::string* reasoning = string_field(*delta, "reasoning_content")) add_reasoning(*reasoning, events);
        if (const std::string* content = string_field(*delta, "content")) add_content(*content, events);
        if (const json::Value* calls = json::field(*delta, "tool_calls"); calls != nullptr && calls->is_array())
            for (const json::Value& call : calls->items()) add_tool_call_delta(call, events);
    }
    if (const std::string* reason = string_field(choice, "finish_reason")) finish_reason_ = *reason;
    return events;
}

void ResponsesWriter::on_completion(const json::Value& completion) {
    std::vector<json::Value> ignored;  // not streaming: only the items count
    if (const json::Value* usage = json::field(completion, "usage")) read_usage(*usage);
    const json::Value* choices = json::field(completion, "choices");
    if (choices == nullptr || !choices->is_array() || choices->items().empty()) return;
    const json::Value& choice = choices->items()[0];
    if (const json::Value* message = json::field(choice, "message")) {
        if (const std::string* reasoning = string_field(*message, "reasoning_content")) add_reasoning(*reasoning, ignored);
        if (const std::string* content = string_field(*message, "content")) add_content(*content, ignored);
        if (const json::Value* calls = json::field(*message, "tool_calls"); calls != nullptr && calls->is_array()) {
            for (size_t i = 0; i < calls->items().size(); ++i) {
                json::Value call = calls->items()[i];
                call.set("index", static_cast<int64_t>(i));
                add_tool_call_delta(call, ignored);
            }
        }
    }
    if (const std::string* reason = string_field(choice, "finish_reason")) finish_reason_ = *reason;
}

std::vector<json::Value> ResponsesWriter::closing() {
    std::vector<json::Value> events;
    // A response that said nothing still answers with an (empty) message.
    if (kind_ == ItemKind::None && output_.empty()) open_message(events);
    close(events);
    status_ = finish_reason_ == "length" ? "incomplete" : "completed";
    json::Value fields = json::Value::object();
    fields.set("response", response());
    events.push_back(event(status_ == "incomplete" ? "response.incomplete" : "response.completed", std::move(fields)));
    return events;
}

}  // namespace vllm::chat
