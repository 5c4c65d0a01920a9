// One chat call: the fan-out stage (choice_call.h) with chat's renderer.
// Streaming, one `chat.completion.chunk` per event: every choice's role
// chunk first (vLLM's first iteration), then each choice's delta chunks
// (its output split into reasoning, content and tool calls by its own
// parser, made at the start) and finish chunk, interleaved as the stage
// orders them, then the usage chunk when stream_options.include_usage asks
// for it. Not streaming, the one `chat.completion`.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "chat/chat_output_parser.h"
#include "chat/chat_response.h"
#include "chat/chat_service.h"
#include "chat/choice_call.h"

namespace vllm::chat {

class ChatCall : public ChoiceCall {
public:
    // Submits the prepared request's choices and starts listening to them;
    // its events are announced on `queue` under `tag`.
    static std::shared_ptr<ChatCall> start(const ChatService& service,
                                           std::shared_ptr<const ChatService::Prepared> prepared,
                                           std::shared_ptr<ReadyQueue> queue, uint64_t tag);
    ~ChatCall() override;

private:
    ChatCall(const ChatService& service, const ChatService::Prepared& prepared, std::shared_ptr<ReadyQueue> queue,
             uint64_t tag);

    void render_opening() override;
    void render_delta(size_t choice, RequestStream& stream, const RequestStream::Pending& event) override;
    void render_end(size_t choice, RequestStream& stream, const RequestStream::Result& result) override;
    void render_closing() override;

    // What rendering needs of the request: the Prepared itself (which may
    // hold large JSON, e.g. a schema) is let go of by the submitting thread,
    // not by the consumer's.
    struct Shape {
        bool include_usage = false;
        bool return_token_ids = false;
        bool logprobs = false;
        bool return_tokens_as_token_ids = false;
        bool forced_tool_call = false;
        std::vector<int32_t> prompt_ids;
    };

    const ChatService& service_;
    const Shape shape_;
    std::vector<ChatOutputParser> parsers_;  // one per choice, made at the start

    // The renderer's state: touched by the consumer's thread only.
    std::vector<size_t> ids_sent_;           // per choice, of its tokens, with return_token_ids
    std::optional<ChatChunkWriter> writer_;  // streaming
    ChatResponseParts parts_;                // not streaming
    Usage usage_;
};

}  // namespace vllm::chat
