// What the OpenAI requests of every endpoint share (chat and completions
// now; the Responses and Messages APIs next), read by one parser so that the
// same value gets the same answer on each: the model name, the sampling
// fields (sample/sampling_fields.h), `n`, `priority`, `stream` and
// `stream_options`, vLLM's `return_token_ids` / `return_tokens_as_token_ids`,
// and the output constraint (`response_format`, vLLM's `structured_outputs`
// and the `guided_*` fields it replaced). A wrong type or an out-of-range
// value is INVALID_ARGUMENT naming the field ("'n' must be between 1 and
// 128 (got 0)"). Fields a reader does not know are left to the endpoint's
// own parser (chat_request.h, completion_request.h), which ignores those it
// does not know either (the C ABI's rule; the HTTP server refuses the ones
// OpenAI does not document). The constraint is compiled by
// chat_constraint.h's format_constraint.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sample/sampling_config.h"
#include "util/json.h"

namespace vllm::chat {

// response_format: "text" (no constraint), "json_object", or "json_schema"
// with its schema (JSON text; "" when the request gave none: any object).
struct ResponseFormat {
    enum class Type { Text, JsonObject, JsonSchema };
    Type type = Type::Text;
    std::string schema;
};

// vLLM's structured_outputs ({"json" | "regex" | "choice" | "grammar" |
// "json_object": ...}) or its older guided_json / guided_regex /
// guided_choice / guided_grammar fields: one constraint, named by the field
// it came from (for errors).
struct GuidedOutput {
    enum class Kind { None, JsonSchema, JsonObject, Regex, Choice, Grammar };
    Kind kind = Kind::None;
    std::string field;                 // e.g. "guided_regex", "structured_outputs.json"
    std::string text;                  // the schema (JSON text), pattern or grammar
    std::vector<std::string> choices;  // Kind::Choice
};

// The limits both endpoints hold requests to.
constexpr int32_t kMaxChoices = 128;  // n

struct OpenAIRequest {
    std::string model;  // "" when absent
    // The sampling fields, read by the engine's one parser of them, over
    // the endpoint's defaults (chat: max_tokens 0, up to max_model_len;
    // completions: 16).
    SamplingConfig sampling;
    int32_t n = 1;         // choices per prompt, 1..kMaxChoices
    int32_t priority = 0;  // lower runs first under the "priority" policy
    bool stream = false;
    bool include_usage = false;               // stream_options.include_usage
    bool return_token_ids = false;            // vLLM's: each choice's token ids, and the prompt's
    bool return_tokens_as_token_ids = false;  // vLLM's: logprobs name tokens "token_id:<id>"
    ResponseFormat response_format;
    GuidedOutput guided;  // at most one of it and response_format constrains
};

// Reads the shared fields of `body` (a JSON object) into `request`, whose
// `sampling` holds the endpoint's defaults.
void parse_openai_fields(const json::Value& body, OpenAIRequest& request);

}  // namespace vllm::chat
