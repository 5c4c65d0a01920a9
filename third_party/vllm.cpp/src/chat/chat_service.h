// One OpenAI chat request through the engine: validate it, render and
// tokenize the prompt, submit one engine request per choice, split each
// choice's output into reasoning, content and tool calls, and build the
// `chat.completion` response or the `chat.completion.chunk` stream.
//
// Prompt: the model's chat template (chat_prompt.h) rendered with the
// tokenizer's BOS/EOS token texts, tokenized as vLLM does for chat (no
// BOS/EOS added, special-token texts parsed as the tokens).
//
// Choices: `n` engine requests with the same prompt ids, the request's
// sampling and `priority`, generated concurrently. With a seed, choice i
// samples with seed + i (vLLM's rule for n > 1): the choices differ and the
// response is reproducible. Usage counts the prompt once and sums the
// completion tokens of every choice.
//
// Output parsers (per choice): the reasoning parser named at load, else the
// one the template's markers show ("none", or nothing detected: no split);
// the tool parser named at load, else the detected one, used when the
// request has tools and tool_choice is "auto" (as in vLLM, "auto" without a
// tool parser is INVALID_ARGUMENT). response_format and tool_choice
// "required" / a named function constrain every choice's output with a
// grammar (chat_constraint.h); forced calls are read back by
// forced_tool_parser.h, whatever the model's own tool-call dialect.
//
// Streaming sends every choice's role chunk, then each choice's delta chunks
// and finish chunk as they are generated, the choices interleaved as vLLM
// interleaves them (chat_call.h says how). Then the usage
// chunk when stream_options.include_usage asks for it, then the terminal call
// (finished, ""). A sink that returns false cancels every choice; the call
// returns once the engine has let go of all of them. An engine failure ends
// the stream with the terminal call and throws the failing request's status.
//
// The generation half is a stage over the pull primitive (chat_call.h): the
// blocking complete() and stream() here drain one on the calling thread;
// non-blocking callers (vllm_chat_submit, vllm_chat_submit_pull) split a call
// in two: prepare_request() validates, renders and tokenizes on the
// submitting thread (so a bad request fails there), and a ChatCall started
// from the Prepared is taken by its consumer.
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_output_parser.h"
#include "chat/chat_request.h"
#include "chat/chat_template.h"
#include "engine/ready_queue.h"
#include "engine/request_stream.h"
#include "sample/sampling_config.h"
#include "tokenizer/tokenizer.h"

namespace vllm::chat {

// The model's parser options (vllm_model_params tool_parser and
// reasoning_parser): "" or "auto" = detect from the chat template.
struct ChatParserNames {
    std::string tool_parser;
    std::string reasoning_parser;
};

class ChatCall;

class ChatService {
public:
    // A validated request with its prompt ids.
    struct Prepared {
        ChatRequest request;
        std::string prompt_text;
        std::vector<int32_t> prompt_ids;
        // Each choice's sampling (a seeded choice i adds i to the seed): the
        // request's fields, logprobs, options and output constraint
        // (response_format / forced tool calls; null grammar: none).
        SamplingConfig sampling;
        // Set: the choices are submitted through it instead of the
        // service's submit (a request with images: chat_images.h).
        std::function<std::shared_ptr<RequestStream>(std::vector<int32_t>, SamplingConfig, int32_t)> submit;
    };

    // Starts one engine request (Engine::submit_tokens; tests script one).
    using Submit =
        std::function<std::shared_ptr<RequestStream>(std::vector<int32_t> prompt_ids, SamplingConfig, int32_t priority)>;
    // Receives each chunk's JSON; false stops the stream. The terminal call
    // has finished == true and "" (its return value is ignored).
    using ChunkSink = std::function<bool(const std::string& chunk, bool finished)>;

    // template_source: the model's chat template, "" when it has none.
    // INVALID_ARGUMENT for an unknown parser name or a template that does not
    // parse. `tokenizer` must outlive the service. max_model_len > 0: a
    // rendered prompt longer than it is refused by prepare_request (in the
    // engine's words, engine/context_length.h), before anything is submitted.
    // `compiler`: the engine's, through which constraints compile (nullptr:
    // on the calling thread); it must outlive the service.
    ChatService(const Tokenizer& tokenizer, const std::string& template_source, std::string model_name,
                const ChatParserNames& parsers, Submit submit, int max_model_len = 0,
                const structured::GrammarCompiler* compiler = nullptr);
    ~ChatService();

    // The `chat.completion` JSON. Thread-safe (const).
    std::string complete(std::string_view request_json) const;
    // Streams the chunks into `sink` (see above). Thread-safe (const).
    void stream(std::string_view request_json, const ChunkSink& sink) const;

    // The validation half: INVALID_ARGUMENT for a request that is not valid.
    // `n_images`: the images given beside it, one per {"type": "image"} part.
    std::shared_ptr<const Prepared> prepare_request(std::string_view request_json, size_t n_images = 0) const;
    // The request's "stream" field.
    static bool wants_stream(const Prepared& prepared);
    // The rendered prompt's token ids (what the choices are submitted with).
    static const std::vector<int32_t>& prompt_ids(const Prepared& prepared);
    // The generation half: a ChatCall of `prepared` (chat_call.h) whose
    // events are announced on `queue` under `tag`.
    std::shared_ptr<ChatCall> start(std::shared_ptr<const Prepared> prepared, std::shared_ptr<ReadyQueue> queue,
                                    uint64_t tag) const;

private:
    friend class ChatCall;
    friend class MessagesCall;  // the Messages API on the chat road (messages_call.h)

    // Runs `prepared` on the calling thread, its events into `sink`; throws
    // a failed call's status once the engine has let go of every choice.
    void run(std::shared_ptr<const Prepared> prepared, const ChunkSink& sink) const;
    ChatOutputParser output_parser(const Prepared& prepared) const;
    // Structured output after thinking and thinking_token_budget: when the
    // output starts inside the reasoning parser's section, the sampling
    // gets its end (SamplingConfig::reasoning), so that the engine holds the
    // grammar back until it and forces it past the budget.
    void bound_reasoning(Prepared& p) const;
    // A request's own chat template, parsed (INVALID_ARGUMENT "'chat_template': ..." when it does not parse).
    ChatTemplate request_template(const std::string& source) const;
    // The request's "model" echoed back (as vLLM does; a server has checked
    // it names the served model), else the model's own name.
    const std::string& response_model(const Prepared& prepared) const;

    const Tokenizer& tokenizer_;
    std::unique_ptr<ChatTemplate> template_;  // null: the model has no chat template
    std::string model_name_;
    std::string tool_parser_;       // "" : none
    std::string reasoning_parser_;  // "" : none
    Submit submit_;
    int max_model_len_;  // 0: not checked here
    const structured::GrammarCompiler* compiler_;
};

}  // namespace vllm::chat
