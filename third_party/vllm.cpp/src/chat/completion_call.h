// One completions call: the fan-out stage (choice_call.h) with the
// completions API's renderer, which writes what vLLM's /v1/completions
// writes. Streaming, one `text_completion` chunk per event: each choice's
// text as it is generated (with its tokens' legacy logprobs, continuing
// the choice's text offsets, and with return_token_ids their ids: a
// choice's first chunk also carries its prompt's), then its finish chunk
// (with prompt_logprobs when asked for), interleaved as the stage orders
// them; then the usage chunk when stream_options.include_usage asks for it.
// Echo puts each choice's prompt first: in the opening, or, when the
// prompt's logprobs are shown, once they are known (with the choice's first
// token). Not streaming, the one `text_completion` response. Usage counts
// each prompt once, whatever n is.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/choice_call.h"
#include "chat/choice_logprobs.h"
#include "chat/completion_service.h"
#include "util/json.h"

namespace vllm::chat {

class CompletionCall : public ChoiceCall {
public:
    static std::shared_ptr<CompletionCall> start(const CompletionService& service,
                                                 std::shared_ptr<const CompletionService::Prepared> prepared,
                                                 std::shared_ptr<ReadyQueue> queue, uint64_t tag,
                                                 const Submit& submit);
    ~CompletionCall() override;

private:
    CompletionCall(const CompletionService& service, const CompletionService::Prepared& prepared,
                   std::shared_ptr<ReadyQueue> queue, uint64_t tag);

    void render_opening() override;
    void render_delta(size_t choice, RequestStream& stream, const RequestStream::Pending& event) override;
    void render_end(size_t choice, RequestStream& stream, const RequestStream::Result& result) override;
    void render_closing() override;

    // One streamed chunk: the envelope with this one choice.
    std::string chunk(size_t choice, const std::string& text, const json::Value* logprobs,
                      const std::string& finish_reason, const std::string& extra) const;
    // return_token_ids' fields of a chunk ("" without it): the prompt's ids
    // on a choice's first chunk, then the chunk's own token ids.
    std::string token_ids_fields(size_t choice, const std::vector<int32_t>& ids);
    // The echoed prompt's chunk (its logprobs from `stream` when shown).
    void push_echo(size_t choice, const RequestStream* stream);
    // An echoed prompt's first token's name: nothing predicts it.
    std::vector<std::string> unpredicted(size_t prompt) const;
    std::string finish_reason(const RequestStream::Result& result) const;
    size_t prompt_of(size_t choice) const { return choice / static_cast<size_t>(n_); }

    const Tokenizer& tokenizer_;
    const TokenNaming naming_;
    // What rendering needs of the request (the Prepared is let go of by the
    // submitting thread).
    const int32_t n_;
    const bool echo_, echo_only_, logprobs_, prompt_logprobs_, return_token_ids_, include_usage_;
    const bool echo_logprobs_;  // the echoed prompt shows its logprobs
    std::vector<std::vector<int32_t>> prompt_ids_;
    std::vector<std::string> echoed_;  // per prompt, with echo

    // The renderer's state: touched by the consumer's thread only.
    std::string id_;
    int64_t created_ = 0;
    std::string model_;
    std::string head_;  // streaming: every chunk's JSON up to its choice's index
    struct ChoiceState {
        bool started = false;     // a chunk of it went out
        size_t text_offset = 0;   // of the legacy logprobs, in code points
        size_t ids_sent = 0;      // of its tokens, with return_token_ids
    };
    std::vector<ChoiceState> state_;
    std::vector<json::Value> choices_json_;  // not streaming, by index
    int64_t completion_tokens_ = 0;
};

}  // namespace vllm::chat
