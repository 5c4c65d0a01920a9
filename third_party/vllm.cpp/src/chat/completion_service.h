// One OpenAI /v1/completions request through the engine: validate it
// (completion_request.h), tokenize its prompts (a text prompt as the engine
// tokenizes one, with BOS; token ids as given; the last
// truncate_prompt_tokens of each when asked), and run it as a
// CompletionCall (completion_call.h): `n` choices per prompt on the fan-out
// stage chat uses, rendered as `text_completion` JSON.
//
// As for chat, non-blocking callers split a call in two: prepare_request()
// validates and tokenizes on the submitting thread (so a bad request fails
// there: INVALID_ARGUMENT naming the field, or the engine's context-length
// refusal), and the call started from the Prepared is taken by its consumer.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/choice_call.h"
#include "chat/completion_request.h"
#include "engine/ready_queue.h"
#include "sample/sampling_config.h"
#include "tokenizer/tokenizer.h"

namespace vllm::structured {
class GrammarCompiler;
}

namespace vllm::chat {

class CompletionCall;

class CompletionService {
public:
    struct Prepared {
        CompletionRequest request;
        std::vector<std::vector<int32_t>> prompt_ids;  // per prompt, as it runs
        // Each choice's sampling (a seeded choice i adds i to the seed), its
        // output constraint included (null grammar: none).
        SamplingConfig sampling;
    };

    // `tokenizer` and `compiler` (the engine's; nullptr: compile on the
    // calling thread) must outlive the service. max_model_len > 0: a
    // prompt longer than it is refused by prepare_request.
    CompletionService(const Tokenizer& tokenizer, std::string model_name, ChoiceCall::Submit submit,
                      int max_model_len = 0, const structured::GrammarCompiler* compiler = nullptr);

    std::shared_ptr<const Prepared> prepare_request(std::string_view request_json) const;
    // A CompletionCall of `prepared` whose events are announced on `queue` under `tag`.
    std::shared_ptr<CompletionCall> start(std::shared_ptr<const Prepared> prepared, std::shared_ptr<ReadyQueue> queue,
                                          uint64_t tag) const;

    const Tokenizer& tokenizer() const { return tokenizer_; }
    // The request's "model" echoed back (as vLLM does; a server has checked
    // it names the served model), else the model's own name.
    const std::string& response_model(const Prepared& prepared) const;

private:
    const Tokenizer& tokenizer_;
    std::string model_name_;
    ChoiceCall::Submit submit_;
    int max_model_len_;
    const structured::GrammarCompiler* compiler_;
};

}  // namespace vllm::chat
