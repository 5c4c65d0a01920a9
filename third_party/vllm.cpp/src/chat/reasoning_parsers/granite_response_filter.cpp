#include "chat/reasoning_parsers/granite_response_filter.h"

#include <utility>

#include "chat/marker_scan.h"

namespace vllm::chat {

namespace {

constexpr std::string_view kOpen = "<response>";
constexpr std::string_view kClose = "</response>";
constexpr std::string_view kSpace = " \t\r\n";

// How much of the end of `text` may still be the closing tag (whole, or
// cut short), with whitespace after it.
size_t closing_tail(std::string_view text) {
    const size_t last = text.find_last_not_of(kSpace);
    const std::string_view body = text.substr(0, last == std::string_view::npos ? 0 : last + 1);
    const size_t space = text.size() - body.size();
    if (ends_with(body, kClose)) return kClose.size() + space;
    return space > 0 ? 0 : partial_marker_length(body, {kClose});
}

}  // namespace

ReasoningDelta GraniteResponseFilter::feed(std::string_view text) {
    ReasoningDelta out = inner_->feed(text);
    out.content = filter(out.content, /*at_end=*/false);
    return out;
}

ReasoningDelta GraniteResponseFilter::finish() {
    ReasoningDelta out = inner_->finish();
    out.content = filter(out.content, /*at_end=*/true);
    return out;
}

std::string GraniteResponseFilter::filter(std::string_view content, bool at_end) {
    if (start_ == Start::Plain) return std::string(content);
    held_ += content;
    if (start_ == Start::Undecided) {
        const size_t lead = held_.find_first_not_of(kSpace);
        const std::string_view rest = lead == std::string::npos ? std::string_view() : std::string_view(held_).substr(lead);
        if (rest.substr(0, kOpen.size()) == kOpen) {
            start_ = Start::Wrapped;
            held_.erase(0, lead + kOpen.size());
        } else if (!at_end && kOpen.substr(0, rest.size()) == rest) {
            return "";  // may still open with the wrapper
        } else {
            start_ = Start::Plain;
            return std::exchange(held_, std::string());
        }
    }
    if (at_end) {
        std::string out = std::exchange(held_, std::string());
        const size_t last = out.find_last_not_of(kSpace);
        const std::string_view body = std::string_view(out).substr(0, last == std::string::npos ? 0 : last + 1);
        if (ends_with(body, kClose)) return std::string(body.substr(0, body.size() - kClose.size()));
        return out;
    }
    const size_t keep = closing_tail(held_);
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

}  // namespace vllm::chat
