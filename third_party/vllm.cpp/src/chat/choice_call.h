// The one `n` fan-out of the OpenAI protocol room: a call's choices as a
// stage over the pull primitive (engine/ready_queue.h). It submits `n`
// engine requests per prompt (choice `prompt_index * n + i`, vLLM's
// numbering; a seeded choice i samples with seed + i, vLLM's rule), listens
// to them, and has an endpoint's renderer (ChatCall, CompletionCall) turn
// their events into that endpoint's JSON on its consumer's thread, when the
// consumer takes them. No thread of its own: a pull consumer (vllm_poller)
// takes its events among other requests'; a callback request's delivery
// thread or a blocking caller drains it alone (deliver()).
//
// Order (vLLM's, the same for every endpoint): streaming, the renderer's
// opening events (chat's role chunks), then each choice's events as they
// are generated, interleaved: one event of each choice that has one in
// turn, from the choice after the last one rendered (the engine's step
// order, since the choices run in the same batch); then its closing events
// (the usage chunk); then the terminal event (finished, ""). Not streaming:
// the response, then the terminal event (deliver() hands the response over
// with the terminal call, as vllm_chat_submit's callback gets it).
//
// A choice the engine fails ends the call: the other choices are cancelled,
// no event follows but the terminal one (outcome() says why). The terminal
// event comes once the engine has let go of every choice, so a consumer that
// has it may free the call at once.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/ready_queue.h"
#include "engine/request_stream.h"
#include "sample/sampling_config.h"

namespace vllm::chat {

class ChoiceCall : public PullSource, public StreamListener {
public:
    // Receives each event's text; false (on a non-terminal event) cancels
    // the call.
    using Sink = std::function<bool(const std::string& text, bool finished)>;
    // Starts one engine request (Engine::submit_tokens; tests script one).
    using Submit =
        std::function<std::shared_ptr<RequestStream>(std::vector<int32_t> prompt_ids, SamplingConfig, int32_t priority)>;

    ~ChoiceCall() override;

    bool take(RequestStream::Pending& out) override;
    // Stops listening to the choices (after the call's end; breaks the
    // stream -> call -> stream cycle).
    void detach() override;
    void stream_ready() override { announce(); }

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

protected:
    ChoiceCall(std::shared_ptr<ReadyQueue> queue, uint64_t tag, bool stream);

    // Submits `n` choices of each prompt and starts listening to them (once
    // the renderer is ready: its events may be taken from here on). A
    // refused choice cancels those already submitted, then throws.
    void submit_choices(const std::vector<std::vector<int32_t>>& prompts, int32_t n, const SamplingConfig& sampling,
                        int32_t priority, const Submit& submit);

    // The renderer, called on the consumer's thread; each adds its events
    // with push(). What they throw fails the call (outcome()).
    // Streaming, before any choice's event.
    virtual void render_opening() {}
    // Streaming: a choice's new output (its text, token count, logprobs).
    virtual void render_delta(size_t choice, RequestStream& stream, const RequestStream::Pending& event) = 0;
    // A choice finished well (`result` holds its whole output).
    virtual void render_end(size_t choice, RequestStream& stream, const RequestStream::Result& result) = 0;
    // Every choice has ended: the usage chunk, or the whole response.
    virtual void render_closing() = 0;

    void push(std::string text);
    bool streaming() const { return stream_; }
    size_t choice_count() const { return choices_.size(); }

private:
    // Renders the choices' next event(s) until one is ready (never blocks:
    // stops where the choices have nothing new).
    void render();
    // Whether a take could hand over an event now.
    bool more_ready() const;
    // One choice's new event (or its end) rendered; false when it has none.
    bool render_choice_event(size_t choice);
    void fail(vllm_status status, const std::string& error);

    const bool stream_;
    std::vector<std::shared_ptr<RequestStream>> choices_;

    // The renderer's state: touched by the consumer's thread only.
    std::vector<std::string> ready_;  // rendered events not taken yet, in order
    size_t ready_taken_ = 0;
    bool opened_ = false;             // the opening events are out
    size_t next_ = 0;                 // the choice whose turn it is
    size_t choices_left_ = 0;         // choices not ended yet
    std::vector<bool> ended_choice_;  // per choice
    bool rendered_all_ = false;       // nothing but the terminal event left
    std::atomic<bool> ended_{false};  // the terminal event was taken
    std::atomic<bool> cancelled_{false};

    mutable std::mutex failure_mutex_;
    Outcome failure_;  // the renderer's own failure (a choice's is its stream's)
};

}  // namespace vllm::chat
