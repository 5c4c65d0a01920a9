#include "chat/choice_call.h"

#include <cstdint>
#include <exception>
#include <new>

#include "util/error.h"

namespace vllm::chat {

ChoiceCall::ChoiceCall(std::shared_ptr<ReadyQueue> queue, uint64_t tag, bool stream)
    : PullSource(std::move(queue), tag), stream_(stream) {}

ChoiceCall::~ChoiceCall() = default;

void ChoiceCall::submit_choices(const std::vector<std::vector<int32_t>>& prompts, int32_t n,
                                const SamplingConfig& sampling, int32_t priority, const Submit& submit) {
    try {
        for (const std::vector<int32_t>& prompt : prompts)
            for (int32_t i = 0; i < n; ++i) {
                SamplingConfig choice = sampling;
                if (choice.has_seed) choice.seed += static_cast<uint64_t>(i);
                choices_.push_back(submit(prompt, std::move(choice), priority));
            }
    } catch (...) {
        // A refused choice: those already submitted go, before the refusal.
        for (const auto& stream : choices_) stream->cancel();
        for (const auto& stream : choices_) stream->wait_engine_done();
        throw;
    }
    choices_left_ = choices_.size();
    ended_choice_.assign(choices_.size(), false);
    const auto listener = std::static_pointer_cast<ChoiceCall>(shared_from_this());
    for (const auto& stream : choices_) stream->set_listener(listener);
    announce();  // a streaming call's opening is ready now
}

void ChoiceCall::detach() {
    PullSource::detach();
    for (const auto& stream : choices_) stream->set_listener(nullptr);
}

void ChoiceCall::cancel() {
    if (ended_.load(std::memory_order_acquire)) return;
    cancelled_.store(true, std::memory_order_release);
    for (const auto& stream : choices_) stream->cancel();
}

void ChoiceCall::push(std::string text) { ready_.push_back(std::move(text)); }

void ChoiceCall::fail(vllm_status status, const std::string& error) {
    {
        std::lock_guard<std::mutex> lock(failure_mutex_);
        if (failure_.status == VLLM_OK) failure_ = {status, error};
    }
    rendered_all_ = true;
    ready_.clear();
    ready_taken_ = 0;
    for (const auto& stream : choices_) stream->cancel();
}

bool ChoiceCall::take(RequestStream::Pending& out) {
    out = RequestStream::Pending{};
    if (ended_.load(std::memory_order_acquire)) return false;
    if (cancelled()) {
        rendered_all_ = true;
        ready_.clear();
        ready_taken_ = 0;
    }
    // The renderer runs parsers and JSON writers: what they throw ends this
    // call (its outcome), never the consumer's poll of other requests.
    try {
        render();
    } catch (const Error& e) {
        fail(e.status(), e.what());
    } catch (const std::bad_alloc&) {
        fail(VLLM_ERR_RUNTIME, "out of memory");
    } catch (const std::exception& e) {
        fail(VLLM_ERR_UNKNOWN, std::string("internal error: ") + e.what());
    }
    if (ready_taken_ < ready_.size()) {
        out.text = std::move(ready_[ready_taken_++]);
        if (ready_taken_ == ready_.size()) {
            ready_.clear();
            ready_taken_ = 0;
        }
        // More comes from the choices (their listener announces it), unless
        // it can be rendered already.
        if (more_ready()) announce();
        return true;
    }
    if (!rendered_all_ || !engine_done()) return false;
    out.finished = true;  // the terminal event: ""
    ended_.store(true, std::memory_order_release);
    return true;
}

void ChoiceCall::render() {
    // Lazily, one event at a time: a stop or cancel leaves the choices'
    // later events untaken (so cancelling still reaches their requests).
    while (!rendered_all_ && ready_taken_ == ready_.size()) {
        if (!opened_) {
            opened_ = true;
            if (streaming()) render_opening();
            continue;
        }
        if (choices_left_ > 0) {
            // The choices in turn, from the one after the last rendered:
            // each one's events as they are generated, none waiting on another.
            bool rendered = false;
            for (size_t k = 0; k < choices_.size() && !rendered && !rendered_all_; ++k) {
                const size_t i = (next_ + k) % choices_.size();
                if (ended_choice_[i] || !render_choice_event(i)) continue;
                next_ = (i + 1) % choices_.size();
                rendered = true;
            }
            if (!rendered) return;
            continue;
        }
        render_closing();
        rendered_all_ = true;
    }
}

bool ChoiceCall::more_ready() const {
    if (ready_taken_ < ready_.size()) return true;
    if (rendered_all_) return engine_done();
    if (choices_left_ == 0 || !opened_) return true;
    for (size_t i = 0; i < choices_.size(); ++i)
        if (!ended_choice_[i] && choices_[i]->has_pending()) return true;
    return false;
}

bool ChoiceCall::render_choice_event(size_t choice) {
    RequestStream& stream = *choices_[choice];
    RequestStream::Pending event;
    // A response that does not stream reads each choice's output whole.
    if (!stream.take_pending(event, /*coalesce=*/!streaming())) return false;
    if (!event.finished) {
        if (streaming()) render_delta(choice, stream, event);
        return true;
    }
    if (stream.cancel_requested()) {  // dropped after a cancel: nothing more to render
        rendered_all_ = true;
        return false;
    }
    const RequestStream::Result result = stream.result();
    if (result.status != VLLM_OK) {  // the choice failed: so does the call
        fail(result.status, result.error);
        return false;
    }
    render_end(choice, stream, result);
    ended_choice_[choice] = true;
    --choices_left_;
    return true;
}

void ChoiceCall::deliver(const Sink& sink) {
    RequestStream::Pending event;
    std::string response;  // not streaming: handed over with the terminal call
    bool done = false;
    while (!done) {
        queue().wait(-1, SIZE_MAX);  // this call is all the queue holds
        while (!done && take(event)) {
            done = event.finished;
            if (!streaming()) {
                if (!done) response = std::move(event.text);
                else event.text = std::move(response);
            }
            if (cancelled() || (event.text.empty() && !event.finished)) continue;
            if (!sink(event.text, event.finished) && !event.finished) cancel();
        }
    }
    wait_engine_done();
    queue().wait(0, SIZE_MAX);  // a last announce's entry holds this call: let go of it
}

bool ChoiceCall::engine_done() const {
    for (const auto& stream : choices_)
        if (!stream->engine_done()) return false;
    return true;
}

void ChoiceCall::wait_engine_done() const {
    for (const auto& stream : choices_) stream->wait_engine_done();
}

bool ChoiceCall::wait_engine_done_until(std::chrono::steady_clock::time_point deadline) const {
    for (const auto& stream : choices_)
        if (!stream->wait_engine_done_until(deadline)) return false;
    return true;
}

ChoiceCall::Outcome ChoiceCall::outcome() const {
    for (const auto& stream : choices_) {
        const RequestStream::Result result = stream->result();
        if (result.status != VLLM_OK) return {result.status, result.error};
    }
    std::lock_guard<std::mutex> lock(failure_mutex_);
    return failure_;
}

}  // namespace vllm::chat
