// An Anthropic Messages call on the chat road (messages_call.h).
#include "chat/messages_call.h"

#include <utility>

namespace vllm::chat {

std::shared_ptr<const MessagesPrepared> prepare_messages_request(const ChatService& service,
                                                                 std::string_view request_json) {
    auto prepared = std::make_shared<MessagesPrepared>();
    prepared->request = translate_messages_request(request_json);
    prepared->chat = service.prepare_request(prepared->request.chat_request_json);
    return prepared;
}

std::vector<int32_t> messages_prompt_ids(const ChatService& service, std::string_view request_json) {
    const MessagesRequest request = translate_messages_request(request_json, /*count_tokens=*/true);
    return ChatService::prompt_ids(*service.prepare_request(request.chat_request_json));
}

MessagesCall::MessagesCall(const ChatService& service, const MessagesPrepared& prepared,
                           std::shared_ptr<ReadyQueue> queue, uint64_t tag)
    : ChoiceCall(std::move(queue), tag, prepared.request.stream),
      service_(service),
      stop_sequences_(prepared.request.stop_sequences),
      forced_tool_call_(prepared.chat->request.tool_choice == ToolChoice::Required ||
                        prepared.chat->request.tool_choice == ToolChoice::Named),
      skip_special_tokens_(prepared.chat->sampling.skip_special_tokens),
      id_(make_message_id()),
      model_(service.response_model(*prepared.chat)) {}

std::shared_ptr<MessagesCall> MessagesCall::start(const ChatService& service,
                                                  std::shared_ptr<const MessagesPrepared> prepared,
                                                  std::shared_ptr<ReadyQueue> queue, uint64_t tag) {
    const ChatService::Prepared& chat = *prepared->chat;
    std::shared_ptr<MessagesCall> call(new MessagesCall(service, *prepared, std::move(queue), tag));
    call->parser_.emplace(service.output_parser(chat));
    call->usage_.prompt_tokens = static_cast<int64_t>(chat.prompt_ids.size());
    if (prepared->request.stream) {
        call->writer_.emplace(call->id_, call->model_);
    } else {
        call->parts_.id = call->id_;
        call->parts_.model = call->model_;
    }
    call->submit_choices({chat.prompt_ids}, 1, chat.sampling, chat.request.priority, service.submit_);
    return call;
}

MessagesCall::~MessagesCall() = default;

std::optional<std::string> MessagesCall::matched_stop(const RequestStream::Result& result) const {
    if (stop_sequences_.empty() || result.finish_reason == nullptr || std::string(result.finish_reason) != "stop")
        return std::nullopt;
    IncrementalDetokenizer detokenizer(service_.tokenizer_, skip_special_tokens_);
    std::string all;
    for (int32_t token : result.output_tokens) all += detokenizer.push(token);
    all += detokenizer.flush();
    if (all.size() < result.text.size() || all.compare(0, result.text.size(), result.text) != 0) return std::nullopt;
    const std::string_view tail = std::string_view(all).substr(result.text.size());
    for (const std::string& stop : stop_sequences_)
        if (!stop.empty() && tail.substr(0, stop.size()) == stop) return stop;
    return std::nullopt;
}

void MessagesCall::render_opening() { push(writer_->message_start(usage_.prompt_tokens)); }

void MessagesCall::render_delta(size_t, RequestStream&, const RequestStream::Pending& event) {
    for (std::string& e : writer_->delta(parser_->feed(event.text))) push(std::move(e));
}

void MessagesCall::render_end(size_t, RequestStream&, const RequestStream::Result& result) {
    const std::string engine_reason = result.finish_reason != nullptr ? result.finish_reason : "stop";
    usage_.completion_tokens = result.completion_tokens;
    if (streaming()) {
        for (std::string& e : writer_->delta(parser_->finish())) push(std::move(e));
        for (std::string& e : writer_->finish(engine_reason, forced_tool_call_, matched_stop(result), usage_))
            push(std::move(e));
        return;
    }
    parts_.choice.finish_reason = engine_reason;
    parts_.choice.forced_tool_call = forced_tool_call_;
    parser_->parse_all(result.text, parts_.choice);
    parts_.matched_stop = matched_stop(result);
    parts_.usage = usage_;
}

void MessagesCall::render_closing() {
    if (!streaming()) push(build_message(parts_));
}

}  // namespace vllm::chat
