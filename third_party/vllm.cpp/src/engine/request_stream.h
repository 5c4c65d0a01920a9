// The channel between the engine loop and whoever consumes one request's
// output (a delivery thread, a blocking caller, or a streaming caller).
//
// The engine loop only pushes (deltas, then one terminal event) and never
// calls user code; consumers pop events on their own thread. So a callback
// may block, call back into the engine or take the GIL without ever holding
// up the engine loop or an engine lock. Thread-safe.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sample/token_logprob.h"
#include "vllm.h"

namespace vllm {

class RequestStream {
public:
    struct Event {
        std::string delta;
        bool finished = false;
        std::vector<TokenLogprob> logprobs;  // tokens of this step, when requested
    };

    // What the request produced, complete once finished() is true.
    struct Result {
        std::string text;
        const char* finish_reason = nullptr;  // library-owned constant
        int32_t prompt_tokens = 0;
        int32_t completion_tokens = 0;
        std::vector<int32_t> output_tokens;
        std::vector<TokenLogprob> logprobs;  // when requested
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
    // Set by the consumer; the engine loop polls it each step.
    bool cancel_requested() const;

    // --- consumer side ---
    // Blocks for the next event; false when none will come any more (after
    // the terminal event, or once cancelled).
    bool next(Event& event);
    // Stops delivery (no further events, the terminal one included) and asks
    // the engine to drop the request. Idempotent; no effect once the
    // terminal event has been taken.
    void cancel();
    // Blocks until the engine is done with the request (finished or dropped).
    void wait_engine_done();
    bool engine_done() const;
    Result result() const;

private:
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Event> events_;
    Result result_;
    bool engine_done_ = false;       // finish() or mark_aborted() happened
    bool cancel_requested_ = false;  // cancel() won before the terminal event was taken
    bool terminal_taken_ = false;
};

}  // namespace vllm
