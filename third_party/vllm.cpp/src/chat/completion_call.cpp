#include "chat/completion_call.h"

#include <ctime>

#include "chat/openai_protocol.h"

namespace vllm::chat {

namespace {

std::string quoted(std::string_view text) {
    std::string out;
    json::append_quoted(out, text, /*ensure_ascii=*/false);
    return out;
}

}  // namespace

CompletionCall::CompletionCall(const CompletionService& service, const CompletionService::Prepared& prepared,
                               std::shared_ptr<ReadyQueue> queue, uint64_t tag)
    : ChoiceCall(std::move(queue), tag, prepared.request.stream),
      tokenizer_(service.tokenizer()),
      naming_(service.tokenizer(), prepared.request.return_tokens_as_token_ids),
      n_(prepared.request.n),
      echo_(prepared.request.echo),
      echo_only_(prepared.request.echo_only),
      logprobs_(prepared.request.logprobs >= 0),
      prompt_logprobs_(prepared.request.prompt_logprobs),
      return_token_ids_(prepared.request.return_token_ids),
      include_usage_(prepared.request.include_usage),
      echo_logprobs_(prepared.request.echo && prepared.request.logprobs >= 0),
      prompt_ids_(prepared.prompt_ids) {}

std::shared_ptr<CompletionCall> CompletionCall::start(const CompletionService& service,
                                                      std::shared_ptr<const CompletionService::Prepared> prepared,
                                                      std::shared_ptr<ReadyQueue> queue, uint64_t tag,
                                                      const Submit& submit) {
    const CompletionService::Prepared& p = *prepared;
    std::shared_ptr<CompletionCall> call(new CompletionCall(service, p, std::move(queue), tag));
    if (p.request.echo)
        for (size_t i = 0; i < p.request.prompts.size(); ++i) {
            // The prompt as given, unless it was given as ids or truncated:
            // then the text of the ids it runs with.
            const CompletionPrompt& prompt = p.request.prompts[i];
            call->echoed_.push_back(prompt.is_text && p.sampling.truncate_prompt_tokens == 0
                                        ? prompt.text
                                        : detokenized(service.tokenizer(), p.prompt_ids[i]));
        }
    call->id_ = make_completion_id();
    call->created_ = static_cast<int64_t>(std::time(nullptr));
    call->model_ = service.response_model(p);
    call->head_ = "{\"id\":" + quoted(call->id_) + ",\"object\":\"text_completion\",\"created\":" +
                  std::to_string(call->created_) + ",\"model\":" + quoted(call->model_) + ",\"choices\":[{\"index\":";
    const size_t choices = p.prompt_ids.size() * static_cast<size_t>(p.request.n);
    call->state_.assign(choices, ChoiceState{});
    if (!p.request.stream) call->choices_json_.assign(choices, json::Value());
    call->submit_choices(p.prompt_ids, p.request.n, p.sampling, p.request.priority, submit);
    return call;
}

CompletionCall::~CompletionCall() = default;

std::string CompletionCall::chunk(size_t choice, const std::string& text, const json::Value* logprobs,
                                  const std::string& finish_reason, const std::string& extra) const {
    std::string out = head_;
    out += std::to_string(choice);
    out += ",\"text\":";
    json::append_quoted(out, text, /*ensure_ascii=*/false);
    out += ",\"logprobs\":";
    out += logprobs != nullptr ? json::dump(*logprobs) : "null";
    out += ",\"finish_reason\":";
    out += finish_reason.empty() ? "null" : quoted(finish_reason);
    out += extra;
    out += "}]}";
    return out;
}

std::string CompletionCall::token_ids_fields(size_t choice, const std::vector<int32_t>& ids) {
    if (!return_token_ids_) return "";
    std::string out;
    if (!state_[choice].started)
        out += ",\"prompt_token_ids\":" + json::dump(token_ids_json(prompt_ids_[prompt_of(choice)]));
    return out + ",\"token_ids\":" + json::dump(token_ids_json(ids));
}

std::vector<std::string> CompletionCall::unpredicted(size_t prompt) const {
    const int32_t first = prompt_ids_[prompt].front();
    return {naming_.as_token_ids() ? "token_id:" + std::to_string(first) : detokenized(tokenizer_, {first})};
}

void CompletionCall::push_echo(size_t choice, const RequestStream* stream) {
    const size_t prompt = prompt_of(choice);
    std::optional<json::Value> legacy;
    if (echo_logprobs_) {
        const std::vector<vllm::TokenLogprob> entries =
            stream != nullptr ? stream->prompt_logprobs().value_or(std::vector<vllm::TokenLogprob>{})
                              : std::vector<vllm::TokenLogprob>{};
        legacy = legacy_logprobs(unpredicted(prompt), entries, naming_, state_[choice].text_offset);
    }
    std::string extra = token_ids_fields(choice, {});
    push(chunk(choice, echoed_[prompt], legacy ? &*legacy : nullptr, "", extra));
    state_[choice].started = true;
}

std::string CompletionCall::finish_reason(const RequestStream::Result& result) const {
    // Echo without generation ends at its (zero) max_tokens, as vLLM says.
    if (echo_only_) return "length";
    return result.finish_reason != nullptr ? result.finish_reason : "stop";
}

void CompletionCall::render_opening() {
    if (!echo_ || echo_logprobs_) return;  // with logprobs the prompt waits for them
    for (size_t i = 0; i < state_.size(); ++i) push_echo(i, nullptr);
}

void CompletionCall::render_delta(size_t choice, RequestStream& stream, const RequestStream::Pending& event) {
    ChoiceState& state = state_[choice];
    if (echo_logprobs_ && !state.started) push_echo(choice, &stream);  // its logprobs came with the first token
    if (echo_only_) return;  // the token run for the prompt's logprobs is not shown
    std::vector<int32_t> ids;
    if (return_token_ids_ && event.n_tokens > 0) {
        ids = stream.output_tokens(state.ids_sent, static_cast<size_t>(event.n_tokens));
        state.ids_sent += ids.size();
    }
    // Tokens whose text never comes out (a stop string's) still bring their ids.
    if (event.text.empty() && event.logprobs.empty() && ids.empty()) return;
    std::optional<json::Value> legacy;
    if (logprobs_ && !event.logprobs.empty()) legacy = legacy_logprobs({}, event.logprobs, naming_, state.text_offset);
    std::string extra = token_ids_fields(choice, ids);
    push(chunk(choice, event.text, legacy ? &*legacy : nullptr, "", extra));
    state.started = true;
}

void CompletionCall::render_end(size_t choice, RequestStream& stream, const RequestStream::Result& result) {
    const size_t prompt = prompt_of(choice);
    if (!echo_only_) completion_tokens_ += result.completion_tokens;
    // The prompt's entries (tokens 1, 2, ...), set when the request asked for them.
    const std::vector<vllm::TokenLogprob> prompt_entries =
        result.prompt_logprobs.value_or(std::vector<vllm::TokenLogprob>{});
    if (streaming()) {
        if (echo_logprobs_ && !state_[choice].started) push_echo(choice, &stream);
        std::string extra = token_ids_fields(choice, {});
        if (prompt_logprobs_)  // vLLM's prompt_logprobs, streamed with the choice's finish
            extra += ",\"prompt_logprobs\":" + json::dump(prompt_logprobs_json(prompt_entries, tokenizer_));
        push(chunk(choice, "", nullptr, finish_reason(result), extra));
        state_[choice].started = true;
        return;
    }
    json::Value out = json::Value::object();
    out.set("index", static_cast<int64_t>(choice));
    out.set("text", (echo_ ? echoed_[prompt] : std::string()) + (echo_only_ ? std::string() : result.text));
    if (logprobs_) {
        std::vector<vllm::TokenLogprob> entries = echo_ ? prompt_entries : std::vector<vllm::TokenLogprob>{};
        if (!echo_only_) entries.insert(entries.end(), result.logprobs.begin(), result.logprobs.end());
        size_t offset = 0;
        out.set("logprobs", legacy_logprobs(echo_ ? unpredicted(prompt) : std::vector<std::string>{}, entries,
                                            naming_, offset));
    } else {
        out.set("logprobs", json::Value());
    }
    out.set("finish_reason", finish_reason(result));
    if (prompt_logprobs_)
        out.set("prompt_logprobs", prompt_logprobs_json(prompt_entries, tokenizer_));
    if (return_token_ids_) {
        out.set("prompt_token_ids", token_ids_json(prompt_ids_[prompt]));
        out.set("token_ids", token_ids_json(echo_only_ ? std::vector<int32_t>{} : result.output_tokens));
    }
    choices_json_[choice] = std::move(out);
}

void CompletionCall::render_closing() {
    int64_t prompt_tokens = 0;  // each prompt once, whatever n is
    for (const std::vector<int32_t>& ids : prompt_ids_) prompt_tokens += static_cast<int64_t>(ids.size());
    json::Value usage = json::Value::object();
    usage.set("prompt_tokens", prompt_tokens);
    usage.set("completion_tokens", completion_tokens_);
    usage.set("total_tokens", prompt_tokens + completion_tokens_);
    json::Value response = json::Value::object();
    response.set("id", id_);
    response.set("object", "text_completion");
    response.set("created", created_);
    response.set("model", model_);
    if (streaming()) {
        if (!include_usage_) return;
        response.set("choices", json::Value::array());
        response.set("usage", std::move(usage));
        push(json::dump(response));
        return;
    }
    json::Value choices = json::Value::array();
    for (json::Value& choice : choices_json_) choices.push_back(std::move(choice));
    response.set("choices", std::move(choices));
    response.set("usage", std::move(usage));
    push(json::dump(response));
}

}  // namespace vllm::chat
