// The channel between the engine loop and whoever consumes one request's
// output (a delivery thread, a blocking caller, or a streaming caller).
//
// The engine loop only pushes (deltas, then one terminal event) and never
// calls user code; consumers pop events on their own thread. So a callback
// may block, call back into the engine or take the GIL without ever holding
// up the engine loop or an engine lock. Thread-safe.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sample/token_logprob.h"
#include "vllm.h"

namespace vllm {

// Told that a stream has something new for its pull consumer (see
// RequestStream::take_pending). Called with the stream's lock held, from the
// engine loop or a canceller: it must only note the stream as ready, never
// call back into it.
class StreamListener {
public:
    virtual ~StreamListener() = default;
    virtual void stream_ready() = 0;
};

class RequestStream {
public:
    struct Event {
        std::string delta;
        bool finished = false;
        std::vector<TokenLogprob> logprobs;  // tokens of this step, when requested
        int32_t n_tokens = 0;  // tokens generated since the previous event
    };

    // What the request produced, complete once finished() is true.
    struct Result {
        std::string text;
        const char* finish_reason = nullptr;  // library-owned constant
        int32_t prompt_tokens = 0;
        int32_t completion_tokens = 0;
        std::vector<int32_t> output_tokens;
        std::vector<TokenLogprob> logprobs;  // when requested
        // prompt_logprobs: the entries of prompt tokens 1, 2, ... (token 0
        // has none), set once the prompt is computed; nullopt: not asked.
        std::optional<std::vector<TokenLogprob>> prompt_logprobs;
        // A pooling request's vector (engine/pooler.h), set before its end.
        std::vector<float> embedding;
        vllm_status status = VLLM_OK;  // non-OK when the engine failed the request
        std::string error;
    };

    // --- engine side ---
    // The text and tokens one engine step produced (delta may be "": text
    // held back; an event still goes out when logprobs came with it).
    void push_step(const std::string& delta, const std::vector<int32_t>& tokens, std::vector<TokenLogprob> logprobs);
    // Terminal: the request finished by itself (status OK) or failed.
    void finish(const char* finish_reason, vllm_status status = VLLM_OK, const std::string& error = "");
    // The engine dropped the request after a cancel: no terminal event.
    void mark_aborted();
    void set_prompt_tokens(int32_t n);
    void set_prompt_logprobs(std::vector<TokenLogprob> entries);
    void set_embedding(std::vector<float> embedding);
    // Set by the consumer; the engine loop polls it each step.
    bool cancel_requested() const;

    // --- consumer side ---
    // Blocks for the next event; false when none will come any more (after
    // the terminal event, or once cancelled).
    bool next(Event& event);
    // Output tokens [from, from + count) (the ids behind events' n_tokens),
    // fewer where fewer have been generated.
    std::vector<int32_t> output_tokens(size_t from, size_t count) const;
    // The prompt's logprobs once the engine has set them (before the first
    // token's event); nullopt before that or when not asked for.
    std::optional<std::vector<TokenLogprob>> prompt_logprobs() const;
    // Stops delivery (no further events, the terminal one included) and asks
    // the engine to drop the request. Idempotent; no effect once the
    // terminal event has been taken.
    void cancel();
    // Blocks until the engine is done with the request (finished or dropped).
    void wait_engine_done();
    // wait_engine_done until `deadline`; whether the engine is done.
    bool wait_engine_done_until(std::chrono::steady_clock::time_point deadline);
    bool engine_done() const;
    Result result() const;

    // --- pull consumer side (instead of next(): one consumer per stream) ---
    // What the consumer has not taken yet: one event's, or every pending
    // event's deltas and logprobs concatenated.
    struct Pending {
        std::string text;
        std::vector<TokenLogprob> logprobs;
        int32_t n_tokens = 0;   // tokens generated in the events taken
        bool finished = false;  // the terminal event; after cancel(), the engine's drop
    };
    // The listener is told of every new event, and once more when the engine
    // lets go of a cancelled stream; attaching it tells it at once when
    // something is already pending. Null detaches.
    void set_listener(std::shared_ptr<StreamListener> listener);
    // Takes every pending event (coalesce) or the first one (the listener is
    // told again when more remain); false when there is nothing new. A
    // cancelled stream ends with one finished batch, no text, once the engine
    // has dropped it, so a pull consumer always sees an end.
    bool take_pending(Pending& out, bool coalesce);
    // Whether take_pending would hand something over now.
    bool has_pending() const;

private:
    bool has_pending_locked() const;
    void notify_locked();

    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Event> events_;
    Result result_;
    bool engine_done_ = false;       // finish() or mark_aborted() happened
    bool cancel_requested_ = false;  // cancel() won before the terminal event was taken
    bool terminal_taken_ = false;
    int32_t tokens_since_event_ = 0;  // generated by steps that sent no event yet
    std::shared_ptr<StreamListener> listener_;
};

}  // namespace vllm
