// Tool-call parsers: find the function calls a model wrote in its own
// markup and turn them into OpenAI tool calls.
//
// One interface serves streaming and whole outputs: feed() each piece of
// (reasoning-free) content text and finish() at the end; parse_all() is
// feed(everything) + finish() merged, so the streamed deltas always add up
// to the non-streaming result.
//
// Every dialect follows the same rules (vLLM's behaviour where it has one):
//   - text before the first call is content; once a call has been made, text
//     outside the call markup is dropped (as vLLM's extractors do); when only
//     whitespace comes before the first call ("</think>\n\n<tool_call>"),
//     it is dropped too, so that the message is the calls alone;
//   - hermes, llama3_json, qwen3_coder and the forced calls stream as vLLM
//     does: a delta with index, id, name and the arguments' first piece
//     once the call is committed (see each dialect), then deltas with the
//     same index and only argument fragments (id and name empty); a
//     committed call stays a call if its markup breaks later, with the
//     arguments as far as they were read. The other dialects release a call
//     whole, when its markup has closed and parsed: one delta with index,
//     id, name and the complete arguments, so markup that turns out
//     malformed can still be returned as content, as it is;
//   - malformed markup (bad JSON, missing name/arguments) is content, never
//     an error;
//   - arguments are re-serialized as Python's json.dumps(ensure_ascii=False)
//     prints them ({"city": "Paris"}), as vLLM sends them.
//
// Dialects (see each header): hermes, llama3_json, mistral, pythonic
// (llama4_pythonic), qwen3_coder (qwen3_coder_tool_parser.h), glm45 (xml_tool_parsers.h), deepseek_v3,
// deepseek_v31, kimi_k2 (section_tool_parsers.h), granite, phi4_mini_json
// (json_list_tool_parser.h), openai (gpt-oss harmony, harmony_tool_parser.h).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_parsers/streamed_arguments.h"
#include "util/json.h"

namespace vllm::chat {

struct ToolCall {
    std::string id;
    std::string name;
    std::string arguments;  // JSON text
};

// One streamed tool-call delta (OpenAI's choices[].delta.tool_calls[]).
struct ToolCallDelta {
    int index = 0;  // position of the call in the message
    ToolCall call;
    // More arguments of the call at `index` begun by an earlier delta (id
    // and name empty, call.arguments the fragment).
    bool continues() const { return call.id.empty() && call.name.empty(); }
};

// Adds `delta` to `calls`, a fragment to the entry of its call when that is
// the last one, so that one step's fragments travel together.
void append_call_delta(std::vector<ToolCallDelta>& calls, const ToolCallDelta& delta);

struct ToolDelta {
    std::string content;
    std::vector<ToolCallDelta> calls;
    bool empty() const { return content.empty() && calls.empty(); }
};

struct ToolParseResult {
    std::string content;  // "" when the message is only calls (sent as null)
    std::vector<ToolCall> calls;
};

class ToolParser {
public:
    using IdGenerator = std::function<std::string()>;

    virtual ~ToolParser() = default;
    virtual ToolDelta feed(std::string_view text) = 0;
    ToolDelta finish();
    ToolParseResult parse_all(std::string_view text);

    int calls_made() const { return calls_made_; }

protected:
    explicit ToolParser(IdGenerator ids) : ids_(std::move(ids)) {}

    // The dialect's end of output: releases what it still holds.
    virtual void finish_markup(ToolDelta& out) = 0;

    // Opens a streamed call (id, name, no arguments yet) under the next
    // index; its arguments follow with continue_call. Returns the index.
    int begin_call(const std::string& name, ToolDelta& out, std::string id = "");
    void continue_call(int index, std::string_view arguments, ToolDelta& out);
    // A call whose JSON arguments stream while they are generated
    // (streamed_arguments.h): its opening, its arguments read so far, its
    // index (-1: not begun) and how much of its arguments went out.
    struct StreamedCall {
        CallHead head;
        ArgumentsReader arguments;
        int index = -1;
        size_t sent = 0;
    };
    // When a streamed call is committed (named, its first piece sent):
    // at its first argument key (hermes, llama3_json), or once its first
    // member is whole (forced calls: an output the length limit cut inside
    // it stays content).
    enum class CommitAt { FirstKey, FirstMember };
    // `arguments`: the call's arguments so far (at_end: all of them); sends
    // what is new, beginning the call under `name` at its commit point.
    // Returns whether the call has begun.
    bool stream_arguments(StreamedCall& call, const std::string& name, std::string_view arguments, bool at_end,
                          CommitAt commit, ToolDelta& out);
    // The same for a whole call object so far, {"name": "f", "arguments": {...
    // ("parameters" too when accepted); false, sending nothing, while
    // the object does not open so.
    bool stream_call_object(StreamedCall& call, std::string_view object, bool at_end, bool accept_parameters,
                            CommitAt commit, ToolDelta& out);
    // Appends a finished call to `out` under the next index and a fresh id
    // (or `id`, when the model's markup names the call: Kimi-K2).
    void emit_call(const std::string& name, const json::Value& arguments, ToolDelta& out, std::string id = "");
    // {"name": "...", "arguments": {...}} (also "parameters" when allowed)
    // as a call; false, emitting nothing, when the object has another shape.
    bool emit_call_object(const json::Value& object, bool accept_parameters, ToolDelta& out);
    // Text outside call markup: content until the first call, dropped after.
    void emit_outside_text(std::string_view text, ToolDelta& out);
    // Text that is content wherever it stands (malformed markup).
    void emit_content(std::string_view text, ToolDelta& out);

private:
    IdGenerator ids_;
    int calls_made_ = 0;
    bool content_started_ = false;  // non-whitespace content has been released
    std::string held_space_;        // trailing whitespace of the content, until what follows decides
};

// Appends a streamed delta to a whole-message result.
void accumulate(ToolParseResult& result, const ToolDelta& delta);

// JSON text, or nullopt when it does not parse.
std::optional<json::Value> try_parse_json(std::string_view text);

// name: one of the dialects above; anything else is INVALID_ARGUMENT
// "unknown tool_parser 'x' (known: ...)". `ids` makes tool call ids; empty:
// the dialect's random ids (openai_protocol.h). `tools`: the request's tools
// (null: none), whose parameter types the dialects that write bare-text
// values (qwen3_coder, glm45) convert by.
std::unique_ptr<ToolParser> make_tool_parser(std::string_view name, ToolParser::IdGenerator ids = {},
                                             const json::Value& tools = json::Value());

// Whether the dialect's markers are special tokens that detokenizing
// would drop (harmony's "<|channel|>", DeepSeek's and Kimi's call tokens):
// its requests then keep special tokens in the text (vLLM's adjust_request).
bool tool_parser_reads_special_tokens(std::string_view name);

// The dialect a chat template's markers show, or "" when it has none.
std::string detect_tool_parser(std::string_view template_source);

}  // namespace vllm::chat
