#include "chat/chat_call.h"

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <exception>
#include <new>

#include "chat/choice_logprobs.h"
#include "chat/openai_protocol.h"
#include "util/error.h"

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
    : PullSource(std::move(queue), tag),
      service_(service),
      shape_{prepared.request.stream,
             prepared.request.include_usage,
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
    try {
        for (int32_t i = 0; i < p.request.n; ++i) {
            SamplingConfig choice = p.sampling;
            if (choice.has_seed) choice.seed += static_cast<uint64_t>(i);
            call->choices_.push_back(service.submit_(p.prompt_ids, std::move(choice), p.request.priority));
        }
    } catch (...) {
        // A refused choice: those already submitted go, before the refusal.
        for (const auto& stream : call->choices_) stream->cancel();
        for (const auto& stream : call->choices_) stream->wait_engine_done();
        throw;
    }
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
    call->choices_left_ = call->choices_.size();
    call->ended_choice_.assign(call->choices_.size(), false);
    call->ids_sent_.assign(call->choices_.size(), 0);
    const auto listener = std::static_pointer_cast<ChatCall>(call->shared_from_this());
    for (const auto& stream : call->choices_) stream->set_listener(listener);
    call->announce();  // a streaming call's first role chunk is ready now
    return call;
}

ChatCall::~ChatCall() = default;

bool ChatCall::streaming() const { return shape_.stream; }

void ChatCall::detach() {
    PullSource::detach();
    for (const auto& stream : choices_) stream->set_listener(nullptr);
}

void ChatCall::cancel() {
    if (ended_.load(std::memory_order_acquire)) return;
    cancelled_.store(true, std::memory_order_release);
    for (const auto& stream : choices_) stream->cancel();
}

void ChatCall::fail(vllm_status status, const std::string& error) {
    {
        std::lock_guard<std::mutex> lock(failure_mutex_);
        if (failure_.status == VLLM_OK) failure_ = {status, error};
    }
    rendered_all_ = true;
    ready_.clear();
    ready_taken_ = 0;
    for (const auto& stream : choices_) stream->cancel();
}

bool ChatCall::take(RequestStream::Pending& out) {
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

void ChatCall::render() {
    // Lazily, one event at a time: a stop or cancel leaves the choices'
    // later events untaken (so cancelling still reaches their requests).
    while (!rendered_all_ && ready_taken_ == ready_.size()) {
        if (streaming() && !roles_sent_) {  // vLLM's first iteration: every choice's role
            roles_sent_ = true;
            for (size_t i = 0; i < choices_.size(); ++i)
                ready_.push_back(writer_->role_chunk(static_cast<int>(i),
                                                     shape_.return_token_ids && i == 0 ? &shape_.prompt_ids : nullptr));
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
        if (streaming()) {
            if (shape_.include_usage) ready_.push_back(writer_->usage_chunk(usage_));
        } else {
            std::sort(parts_.choices.begin(), parts_.choices.end(),
                      [](const ChoiceParts& a, const ChoiceParts& b) { return a.index < b.index; });
            ready_.push_back(build_chat_completion(parts_));
        }
        rendered_all_ = true;
    }
}

bool ChatCall::more_ready() const {
    if (ready_taken_ < ready_.size()) return true;
    if (rendered_all_) return engine_done();
    if (choices_left_ == 0 || (streaming() && !roles_sent_)) return true;
    for (size_t i = 0; i < choices_.size(); ++i)
        if (!ended_choice_[i] && choices_[i]->has_pending()) return true;
    return false;
}

bool ChatCall::render_choice_event(size_t choice) {
    RequestStream& stream = *choices_[choice];
    const int index = static_cast<int>(choice);
    const bool ids = shape_.return_token_ids;
    RequestStream::Pending event;
    // A response that does not stream reads each choice's output whole.
    if (!stream.take_pending(event, /*coalesce=*/!streaming())) return false;
    if (!event.finished) {
        if (!streaming()) return true;
        ChoiceDelta delta = parsers_[choice].feed(event.text);
        if (shape_.logprobs && !event.logprobs.empty())
            delta.logprobs = chat_logprobs(event.logprobs, service_.tokenizer_, shape_.return_tokens_as_token_ids);
        if (ids) {
            delta.token_ids = stream.output_tokens(ids_sent_[choice], static_cast<size_t>(event.n_tokens));
            ids_sent_[choice] += delta.token_ids.size();
        }
        std::string chunk = writer_->delta_chunk(index, delta);
        if (!chunk.empty()) ready_.push_back(std::move(chunk));
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
    end_choice(choice, result);
    return true;
}

void ChatCall::end_choice(size_t choice, const RequestStream::Result& result) {
    const int index = static_cast<int>(choice);
    ChatOutputParser& parser = parsers_[choice];
    if (streaming()) {
        ChoiceDelta last = parser.finish();
        // Tokens whose text never came out (a stop string's) end the choice's ids.
        if (shape_.return_token_ids)
            last.token_ids.assign(result.output_tokens.begin() + static_cast<std::ptrdiff_t>(ids_sent_[choice]),
                                  result.output_tokens.end());
        std::string chunk = writer_->delta_chunk(index, last);
        if (!chunk.empty()) ready_.push_back(std::move(chunk));
        ready_.push_back(writer_->finish_chunk(index, finish_reason_of(result), shape_.forced_tool_call));
        usage_.completion_tokens += result.completion_tokens;
    } else {
        ChoiceParts choice;
        choice.index = index;
        choice.finish_reason = finish_reason_of(result);
        choice.forced_tool_call = shape_.forced_tool_call;
        parser.parse_all(result.text, choice);
        if (shape_.logprobs)
            choice.logprobs = chat_logprobs(result.logprobs, service_.tokenizer_, shape_.return_tokens_as_token_ids);
        if (shape_.return_token_ids) choice.token_ids = result.output_tokens;
        parts_.usage.completion_tokens += result.completion_tokens;
        parts_.usage.prompt_tokens = usage_.prompt_tokens;
        parts_.choices.push_back(std::move(choice));
    }
    ended_choice_[choice] = true;
    --choices_left_;
}

void ChatCall::deliver(const Sink& sink) {
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

bool ChatCall::engine_done() const {
    for (const auto& stream : choices_)
        if (!stream->engine_done()) return false;
    return true;
}

void ChatCall::wait_engine_done() const {
    for (const auto& stream : choices_) stream->wait_engine_done();
}

bool ChatCall::wait_engine_done_until(std::chrono::steady_clock::time_point deadline) const {
    for (const auto& stream : choices_)
        if (!stream->wait_engine_done_until(deadline)) return false;
    return true;
}

ChatCall::Outcome ChatCall::outcome() const {
    for (const auto& stream : choices_) {
        const RequestStream::Result result = stream->result();
        if (result.status != VLLM_OK) return {result.status, result.error};
    }
    std::lock_guard<std::mutex> lock(failure_mutex_);
    return failure_;
}

}  // namespace vllm::chat
