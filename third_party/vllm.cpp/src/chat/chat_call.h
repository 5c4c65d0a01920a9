// One chat call as a stage over the pull primitive (engine/ready_queue.h):
// it owns its choices' engine streams, listens to them, and renders their
// events into `chat.completion.chunk` JSON (or, not streaming, the one
// `chat.completion`) on its consumer's thread, when the consumer takes
// them. No thread of its own: a pull consumer (vllm_poller) takes its events
// among other requests'; a callback request's delivery thread or a blocking
// caller drains it alone (deliver()).
//
// Events a take hands over: streaming, one chunk each (every choice's role
// chunk first, as vLLM sends them; then each choice's delta chunks and
// finish chunk as they are generated, interleaved as vLLM interleaves them:
// one event of each choice that has one in turn, which is the engine's step
// order since the choices run in the same batch; then the usage chunk when
// stream_options.include_usage asks for it), then the terminal event
// (finished, ""). Not streaming, the
// response, then the terminal event (deliver() hands the response over with
// the terminal call, as vllm_chat_submit's callback gets it). A choice the
// engine fails ends the call: the other choices are cancelled, no event
// follows but the terminal one (outcome() says why). The terminal event comes once the engine has let go
// of every choice, so a consumer that has it may free the call at once.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_output_parser.h"
#include "chat/chat_response.h"
#include "chat/chat_service.h"
#include "engine/ready_queue.h"
#include "engine/request_stream.h"

namespace vllm::chat {

class ChatCall : public PullSource, public StreamListener {
public:
    // Receives each event's text; false (on a non-terminal event) cancels
    // the call.
    using Sink = std::function<bool(const std::string& text, bool finished)>;

    // Submits the prepared request's choices and starts listening to them;
    // its events are announced on `queue` under `tag`.
    static std::shared_ptr<ChatCall> start(const ChatService& service,
                                           std::shared_ptr<const ChatService::Prepared> prepared,
                                           std::shared_ptr<ReadyQueue> queue, uint64_t tag);
    ~ChatCall() override;

    bool take(RequestStream::Pending& out) override;
    // Stops listening to the choices (after the call's end; breaks the
    // stream -> call -> stream cycle).
    void detach() override;

    // Stops every choice: no event but the terminal one after this (which
    // comes once the engine has dropped them all). No effect once the
    // terminal event was taken. Thread-safe.
    void cancel();
    // cancel() ran before the terminal event was taken.
    bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

    // For a call whose queue nobody else waits on: takes its events on the
    // calling thread and hands them to `sink` until the terminal one (not
    // streaming: one terminal call with the response, "" when it failed;
    // after a cancel, no call at all); returns once the engine has let go of
    // every choice.
    void deliver(const Sink& sink);

    // Whether the engine has let go of every choice; waits for it.
    bool engine_done() const;
    void wait_engine_done() const;
    bool wait_engine_done_until(std::chrono::steady_clock::time_point deadline) const;

    // How the call ended, once engine_done(): VLLM_OK, or the first failing
    // choice's status (or the renderer's own failure) and message.
    struct Outcome {
        vllm_status status = VLLM_OK;
        std::string error;
    };
    Outcome outcome() const;

    void stream_ready() override { announce(); }

private:
    ChatCall(const ChatService& service, const ChatService::Prepared& prepared, std::shared_ptr<ReadyQueue> queue,
             uint64_t tag);

    // Renders the choices' next event(s) into ready_ until it holds one
    // (never blocks: stops where the choices have nothing new).
    void render();
    // Whether a take could hand over an event now.
    bool more_ready() const;
    // One choice's new event (or its end) rendered; false when it has none.
    bool render_choice_event(size_t choice);
    void end_choice(size_t choice, const RequestStream::Result& result);
    void fail(vllm_status status, const std::string& error);
    bool streaming() const;

    // What rendering needs of the request: the Prepared itself (which may
    // hold large JSON, e.g. a schema) is let go of by the submitting thread,
    // not by the consumer's.
    struct Shape {
        bool stream = false;
        bool include_usage = false;
        bool return_token_ids = false;
        bool logprobs = false;
        bool return_tokens_as_token_ids = false;
        bool forced_tool_call = false;
        std::vector<int32_t> prompt_ids;
    };

    const ChatService& service_;
    const Shape shape_;
    std::vector<std::shared_ptr<RequestStream>> choices_;
    std::vector<ChatOutputParser> parsers_;  // one per choice, made at the start

    // The renderer: touched by the consumer's thread only.
    std::vector<std::string> ready_;  // rendered events not taken yet, in order
    size_t ready_taken_ = 0;
    bool roles_sent_ = false;        // streaming: every choice's role chunk
    size_t next_ = 0;                // the choice whose turn it is
    size_t choices_left_ = 0;        // choices not ended yet
    std::vector<bool> ended_choice_;  // per choice
    std::vector<size_t> ids_sent_;    // per choice, of its tokens, with return_token_ids
    std::optional<ChatChunkWriter> writer_;   // streaming
    ChatResponseParts parts_;                 // not streaming
    Usage usage_;
    bool rendered_all_ = false;  // nothing but the terminal event left
    std::atomic<bool> ended_{false};      // the terminal event was taken
    std::atomic<bool> cancelled_{false};

    mutable std::mutex failure_mutex_;
    Outcome failure_;  // the renderer's own failure (a choice's is its stream's)
};

}  // namespace vllm::chat
