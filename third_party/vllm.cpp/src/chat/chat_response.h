// Builders for the OpenAI chat responses: the whole `chat.completion`
// object and the `chat.completion.chunk` objects of a stream, as JSON text.
//
// Message fields follow OpenAI, plus vLLM's `reasoning_content` (the name
// vLLM uses for the thinking split off by a reasoning parser). Content is
// null when it is empty and the message carries tool calls or reasoning
// (vLLM's choice), otherwise a string. A choice that made tool calls
// finishes with "tool_calls", whatever the engine's reason.
//
// A request in the legacy function-calling API (`functions`) is answered in
// it, as OpenAI does: the message's `function_call` ({name, arguments}, the
// first call: that API has one) instead of `tool_calls`, streamed as
// `delta.function_call`, and finish reason "function_call".
#pragma once
#include <cstdint>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "chat/tool_parsers/tool_parser.h"
#include "util/json.h"

namespace vllm::chat {

struct TopLogprob {
    std::string token;  // the token's bytes; invalid UTF-8 is shown with U+FFFD, `bytes` keeps it exact
    double logprob = 0.0;  // -inf is sent as -9999.0 (vLLM's stand-in; JSON has no infinity)
};

struct TokenLogprob {
    std::string token;
    double logprob = 0.0;
    std::vector<TopLogprob> top_logprobs;
};

struct Usage {
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
};

struct ChoiceParts {
    int index = 0;
    std::string content;
    std::optional<std::string> reasoning;  // nullopt: no reasoning parser ran or it found none
    std::vector<ToolCall> tool_calls;
    std::string finish_reason = "stop";    // "stop" or "length" from the engine
    bool forced_tool_call = false;         // tool_choice "required" or a named function
    std::optional<std::vector<TokenLogprob>> logprobs;  // set when the request asked for logprobs
    std::optional<std::vector<int32_t>> token_ids;      // set when it asked for return_token_ids
};

// Token ids as a JSON array (return_token_ids' prompt_token_ids and
// token_ids, on chat and completions alike).
json::Value token_ids_json(const std::vector<int32_t>& ids);

// The finish_reason a choice reports: "tool_calls" when it made calls,
// except that a forced call (tool_choice "required" or a named function)
// cut short by max_tokens stays "length", as vLLM reports it: the output is
// unfinished even when some calls in it were complete.
std::string reported_finish_reason(const std::string& engine_reason, bool made_tool_calls, bool forced_tool_call);

struct ChatResponseParts {
    std::string id;       // "chatcmpl-..." (make_chat_completion_id)
    int64_t created = 0;  // Unix seconds
    std::string model;
    std::vector<ChoiceParts> choices;
    Usage usage;
    std::optional<std::vector<int32_t>> prompt_token_ids;  // set when the request asked for return_token_ids
    bool legacy_function_call = false;  // the request gave `functions` (see above)
};

std::string build_chat_completion(const ChatResponseParts& parts);

// What one step of a stream adds to one choice.
struct ChoiceDelta {
    std::string reasoning;
    std::string content;
    std::vector<ToolCallDelta> tool_calls;
    std::optional<std::vector<TokenLogprob>> logprobs;
    std::vector<int32_t> token_ids;  // the step's tokens, when the request asked for return_token_ids
    bool empty() const {
        return reasoning.empty() && content.empty() && tool_calls.empty() && !logprobs && token_ids.empty();
    }
};

// The chunks of one streamed response, in the order OpenAI sends them: per
// choice a role chunk first, then delta chunks, then a finish chunk; at the
// end, when stream_options.include_usage asked for it, a usage chunk with
// no choices. Every chunk shares the response's id, created and model.
// With return_token_ids (vLLM's) the first chunk carries the prompt's token
// ids and each delta chunk its tokens' ids.
class ChatChunkWriter {
public:
    ChatChunkWriter(std::string id, int64_t created, std::string model, bool legacy_function_call = false);

    // `prompt_token_ids`: non-null on the response's first chunk when they are asked for.
    std::string role_chunk(int index, const std::vector<int32_t>* prompt_token_ids = nullptr) const;
    // "" when the delta carries nothing (nothing to send).
    std::string delta_chunk(int index, const ChoiceDelta& delta);
    // finish_reason "stop" or "length", as reported_finish_reason() turns
    // it given whether the choice streamed any tool call.
    std::string finish_chunk(int index, const std::string& finish_reason, bool forced_tool_call = false) const;
    std::string usage_chunk(const Usage& usage) const;

private:
    json::Value chunk(json::Value choices) const;

    std::string id_;
    int64_t created_;
    std::string model_;
    bool legacy_function_call_;
    std::set<int> made_tool_calls_;  // choices that streamed a tool call
};

}  // namespace vllm::chat
