#include "chat/completion_service.h"

#include "chat/chat_constraint.h"
#include "chat/completion_call.h"
#include "engine/context_length.h"
#include "util/error.h"

namespace vllm::chat {

CompletionService::CompletionService(const Tokenizer& tokenizer, std::string model_name, ChoiceCall::Submit submit,
                                     int max_model_len, const structured::GrammarCompiler* compiler)
    : tokenizer_(tokenizer),
      model_name_(std::move(model_name)),
      submit_(std::move(submit)),
      max_model_len_(max_model_len),
      compiler_(compiler) {}

std::shared_ptr<const CompletionService::Prepared> CompletionService::prepare_request(
    std::string_view request_json) const {
    auto prepared = std::make_shared<Prepared>();
    Prepared& p = *prepared;
    p.request = parse_completion_request(request_json);
    p.sampling = p.request.sampling;
    for (const CompletionPrompt& prompt : p.request.prompts) {
        std::vector<int32_t> ids = prompt.is_text
                                       ? tokenizer_.encode(prompt.text, /*add_special=*/true, /*parse_special=*/true)
                                       : prompt.ids;
        p.sampling.truncate_prompt(ids);  // what echo, usage and return_token_ids report too
        if (ids.empty()) throw_invalid_argument("prompt is empty (it encodes to no tokens)");
        if (max_model_len_ > 0) check_prompt_fits(ids.size(), max_model_len_);
        for (const int32_t id : ids)
            if (id < 0 || id >= tokenizer_.vocab_size())
                throw_invalid_argument("prompt token id " + std::to_string(id) + " is outside the vocabulary");
        p.prompt_ids.push_back(std::move(ids));
    }
    p.sampling.check_vocabulary(tokenizer_.vocab_size());
    p.sampling.grammar = format_constraint(p.request, compiler_);
    return prepared;
}

std::shared_ptr<CompletionCall> CompletionService::start(std::shared_ptr<const Prepared> prepared,
                                                         std::shared_ptr<ReadyQueue> queue, uint64_t tag) const {
    return CompletionCall::start(*this, std::move(prepared), std::move(queue), tag, submit_);
}

const std::string& CompletionService::response_model(const Prepared& prepared) const {
    return prepared.request.model.empty() ? model_name_ : prepared.request.model;
}

}  // namespace vllm::chat
