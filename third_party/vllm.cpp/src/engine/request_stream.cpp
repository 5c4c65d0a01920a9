#include "engine/request_stream.h"

#include <algorithm>
#include <iterator>

#include "engine/output_processor.h"

namespace vllm {

void RequestStream::push_step(const std::string& delta, const std::vector<int32_t>& tokens,
                              std::vector<TokenLogprob> logprobs) {
    std::lock_guard<std::mutex> lock(mutex_);
    result_.output_tokens.insert(result_.output_tokens.end(), tokens.begin(), tokens.end());
    result_.completion_tokens = static_cast<int32_t>(result_.output_tokens.size());
    result_.logprobs.insert(result_.logprobs.end(), logprobs.begin(), logprobs.end());
    tokens_since_event_ += static_cast<int32_t>(tokens.size());
    if (delta.empty() && logprobs.empty()) return;
    result_.text += delta;
    if (!cancel_requested_) events_.push_back({delta, false, std::move(logprobs), tokens_since_event_});
    tokens_since_event_ = 0;
    cv_.notify_all();
    notify_locked();
}

void RequestStream::set_embedding(std::vector<float> embedding) {
    std::lock_guard<std::mutex> lock(mutex_);
    result_.embedding = std::move(embedding);
}

void RequestStream::finish(const char* finish_reason, vllm_status status, const std::string& error) {
    std::lock_guard<std::mutex> lock(mutex_);
    result_.finish_reason = finish_reason;
    result_.status = status;
    result_.error = error;
    engine_done_ = true;
    if (!cancel_requested_) events_.push_back({"", true, {}, tokens_since_event_});
    tokens_since_event_ = 0;
    cv_.notify_all();
    notify_locked();
}

void RequestStream::mark_aborted() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (result_.finish_reason == nullptr) result_.finish_reason = finish_reason::kAbort;
    engine_done_ = true;
    cv_.notify_all();
    notify_locked();
}

void RequestStream::set_prompt_tokens(int32_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    result_.prompt_tokens = n;
}

void RequestStream::set_prompt_logprobs(std::vector<TokenLogprob> entries) {
    std::lock_guard<std::mutex> lock(mutex_);
    result_.prompt_logprobs = std::move(entries);
}

bool RequestStream::cancel_requested() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cancel_requested_;
}

bool RequestStream::next(Event& event) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return cancel_requested_ || terminal_taken_ || !events_.empty(); });
    if (cancel_requested_ || terminal_taken_) return false;
    event = std::move(events_.front());
    events_.pop_front();
    if (event.finished) terminal_taken_ = true;
    return true;
}

std::vector<int32_t> RequestStream::output_tokens(size_t from, size_t count) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::vector<int32_t>& all = result_.output_tokens;
    const size_t begin = std::min(from, all.size()), end = std::min(all.size(), begin + count);
    return std::vector<int32_t>(all.begin() + begin, all.begin() + end);
}

std::optional<std::vector<TokenLogprob>> RequestStream::prompt_logprobs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return result_.prompt_logprobs;
}

void RequestStream::cancel() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (terminal_taken_ || cancel_requested_) return;
    cancel_requested_ = true;
    events_.clear();
    cv_.notify_all();
    notify_locked();  // a pull consumer's end, when the engine is already done
}

void RequestStream::wait_engine_done() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return engine_done_; });
}

bool RequestStream::wait_engine_done_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_until(lock, deadline, [&] { return engine_done_; });
}

bool RequestStream::engine_done() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return engine_done_;
}

RequestStream::Result RequestStream::result() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return result_;
}

void RequestStream::set_listener(std::shared_ptr<StreamListener> listener) {
    std::lock_guard<std::mutex> lock(mutex_);
    listener_ = std::move(listener);
    if (has_pending_locked()) notify_locked();
}

bool RequestStream::has_pending() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return has_pending_locked();
}

bool RequestStream::has_pending_locked() const {
    if (terminal_taken_) return false;
    return cancel_requested_ ? engine_done_ : !events_.empty();
}

void RequestStream::notify_locked() {
    if (listener_ && has_pending_locked()) listener_->stream_ready();
}

bool RequestStream::take_pending(Pending& out, bool coalesce) {
    std::lock_guard<std::mutex> lock(mutex_);
    out = Pending{};
    if (!has_pending_locked()) return false;
    if (cancel_requested_) {  // dropped by the engine: the end, with nothing more
        out.finished = true;
        terminal_taken_ = true;
        return true;
    }
    do {
        Event& event = events_.front();
        out.text += event.delta;
        out.logprobs.insert(out.logprobs.end(), std::make_move_iterator(event.logprobs.begin()),
                            std::make_move_iterator(event.logprobs.end()));
        out.n_tokens += event.n_tokens;
        out.finished = event.finished;
        events_.pop_front();
    } while (coalesce && !out.finished && !events_.empty());
    if (out.finished) terminal_taken_ = true;
    notify_locked();  // more left (not coalescing)
    return true;
}

}  // namespace vllm
