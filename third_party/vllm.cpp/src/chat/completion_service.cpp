#include "chat/completion_service.h"

#include "chat/chat_constraint.h"
#include "chat/completion_call.h"
#include "engine/context_length.h"

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
        check_prompt_ids(ids, tokenizer_.vocab_size(), max_model_len_);
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
