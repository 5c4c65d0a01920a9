#include "chat/chat_call.h"

#include <algorithm>
#include <cstdint>
#include <ctime>

#include "chat/choice_logprobs.h"
#include "chat/openai_protocol.h"

namespace vllm::chat {

namespace {

bool forced_tool_call(const ChatRequest& request) {
    return request.tool_choice == ToolChoice::Required || request.tool_choice == ToolChoice::Named;
}

std::string finish_reason_of(const RequestStream::Result& result) {
    return result.finish_reason != nullptr ? result.finish_reason : "stop";
}

}  // namespace

ChatCall::ChatCall(const ChatService& service, const ChatService::Prepared& prepared,
                   std::shared_ptr<ReadyQueue> queue, uint64_t tag)
    : ChoiceCall(std::move(queue), tag, prepared.request.stream),
      service_(service),
      shape_{prepared.request.include_usage,
             prepared.request.return_token_ids,
             prepared.request.logprobs,
             prepared.request.return_tokens_as_token_ids,
             forced_tool_call(prepared.request),
             prepared.prompt_ids} {}

std::shared_ptr<ChatCall> ChatCall::start(const ChatService& service,
                                          std::shared_ptr<const ChatService::Prepared> prepared,
                                          std::shared_ptr<ReadyQueue> queue, uint64_t tag) {
    const ChatService::Prepared& p = *prepared;
    std::shared_ptr<ChatCall> call(new ChatCall(service, p, std::move(queue), tag));
    for (int32_t i = 0; i < p.request.n; ++i) call->parsers_.push_back(service.output_parser(p));
    call->ids_sent_.assign(static_cast<size_t>(p.request.n), 0);
    if (p.request.stream) {
        call->writer_.emplace(make_chat_completion_id(), static_cast<int64_t>(std::time(nullptr)),
                              service.response_model(p), p.request.legacy_functions);
    } else {
        call->parts_.id = make_chat_completion_id();
        call->parts_.legacy_function_call = p.request.legacy_functions;
        call->parts_.created = static_cast<int64_t>(std::time(nullptr));
        call->parts_.model = service.response_model(p);
        if (p.request.return_token_ids) call->parts_.prompt_token_ids = p.prompt_ids;
    }
    call->usage_.prompt_tokens = static_cast<int64_t>(p.prompt_ids.size());
    call->submit_choices({p.prompt_ids}, p.request.n, p.sampling, p.request.priority,
                         p.submit ? p.submit : service.submit_);
    return call;
}

ChatCall::~ChatCall() = default;

void ChatCall::render_opening() {  // vLLM's first iteration: every choice's role
    for (size_t i = 0; i < choice_count(); ++i)
        push(writer_->role_chunk(static_cast<int>(i), shape_.return_token_ids && i == 0 ? &shape_.prompt_ids : nullptr));
}

void ChatCall::render_delta(size_t choice, RequestStream& stream, const RequestStream::Pending& event) {
    ChoiceDelta delta = parsers_[choice].feed(event.text);
    if (shape_.logprobs && !event.logprobs.empty())
        delta.logprobs = chat_logprobs(event.logprobs, service_.tokenizer_, shape_.return_tokens_as_token_ids);
    if (shape_.return_token_ids) {
        delta.token_ids = stream.output_tokens(ids_sent_[choice], static_cast<size_t>(event.n_tokens));
        ids_sent_[choice] += delta.token_ids.size();
    }
    std::string chunk = writer_->delta_chunk(static_cast<int>(choice), delta);
    if (!chunk.empty()) push(std::move(chunk));
}

void ChatCall::render_end(size_t choice, RequestStream&, const RequestStream::Result& result) {
    const int index = static_cast<int>(choice);
    ChatOutputParser& parser = parsers_[choice];
    if (streaming()) {
        ChoiceDelta last = parser.finish();
        // Tokens whose text never came out (a stop string's) end the choice's ids.
        if (shape_.return_token_ids)
            last.token_ids.assign(result.output_tokens.begin() + static_cast<std::ptrdiff_t>(ids_sent_[choice]),
                                  result.output_tokens.end());
        std::string chunk = writer_->delta_chunk(index, last);
        if (!chunk.empty()) push(std::move(chunk));
        push(writer_->finish_chunk(index, finish_reason_of(result), shape_.forced_tool_call));
        usage_.completion_tokens += result.completion_tokens;
        return;
    }
    ChoiceParts parts;
    parts.index = index;
    parts.finish_reason = finish_reason_of(result);
    parts.forced_tool_call = shape_.forced_tool_call;
    parser.parse_all(result.text, parts);
    if (shape_.logprobs)
        parts.logprobs = chat_logprobs(result.logprobs, service_.tokenizer_, shape_.return_tokens_as_token_ids);
    if (shape_.return_token_ids) parts.token_ids = result.output_tokens;
    parts_.usage.completion_tokens += result.completion_tokens;
    parts_.usage.prompt_tokens = usage_.prompt_tokens;
    parts_.choices.push_back(std::move(parts));
}

void ChatCall::render_closing() {
    if (streaming()) {
        if (shape_.include_usage) push(writer_->usage_chunk(usage_));
        return;
    }
    std::sort(parts_.choices.begin(), parts_.choices.end(),
              [](const ChoiceParts& a, const ChoiceParts& b) { return a.index < b.index; });
    push(build_chat_completion(parts_));
}

}  // namespace vllm::chat
