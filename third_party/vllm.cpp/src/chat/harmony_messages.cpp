#include "chat/harmony_messages.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "chat/marker_scan.h"

namespace vllm::chat {

namespace {

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kConstrain = "<|constrain|>";
constexpr std::string_view kMessage = "<|message|>";
const std::vector<std::string_view> kHeaderStarts = {kStart, kChannel};
// What ends a body: its terminators, or (a terminator left out) the next message's start.
const std::vector<std::string_view> kBodyEnds = {"<|end|>", "<|call|>", "<|return|>", kStart};

// A header longer than this without "<|message|>" is not a header: real
// ones are a role, a channel, a recipient and a content type. The limit
// keeps a stray "<|channel|>" from holding back (and rescanning) the rest of
// an output.
constexpr size_t kMaxHeader = 1024;

std::vector<std::string> words(std::string_view text) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t begin = text.find_first_not_of(" \t\r\n", pos);
        if (begin == std::string_view::npos) break;
        const size_t end = std::min(text.find_first_of(" \t\r\n", begin), text.size());
        out.emplace_back(text.substr(begin, end - begin));
        pos = end;
    }
    return out;
}

// The text after `marker` in `header`, up to the next "<|" marker; "" when absent.
std::string_view section_after(std::string_view header, std::string_view marker) {
    const size_t at = header.find(marker);
    if (at == std::string_view::npos) return {};
    const std::string_view rest = header.substr(at + marker.size());
    return rest.substr(0, rest.find("<|"));
}

}  // namespace

HarmonyHeader parse_harmony_header(std::string raw) {
    HarmonyHeader h;
    std::string_view text = raw;
    const std::vector<std::string> role = words(section_after(text, kStart));
    const std::vector<std::string> channel = words(section_after(text, kChannel));
    const std::vector<std::string> constrain = words(section_after(text, kConstrain));
    auto take_recipient = [&](const std::vector<std::string>& ws) {
        for (const std::string& w : ws)
            if (w.rfind("to=", 0) == 0 && h.recipient.empty()) h.recipient = w.substr(3);
    };
    take_recipient(words(text.substr(0, text.find("<|"))));  // the output opened with it
    take_recipient(role);
    take_recipient(channel);
    if (!channel.empty()) h.channel = channel[0];
    if (!constrain.empty()) {
        h.content_type = constrain[0];
    } else {
        for (size_t i = 1; i < channel.size(); ++i)
            if (channel[i].rfind("to=", 0) != 0) h.content_type = channel[i];
    }
    h.raw = std::move(raw);
    return h;
}

void HarmonyReader::emit(HarmonyEvent::Kind kind, std::string_view text) {
    if (kind == HarmonyEvent::Kind::MessageEnd || !text.empty()) events_.push_back({kind, std::string(text), {}});
}

std::vector<HarmonyEvent> HarmonyReader::feed(std::string_view text) {
    using Kind = HarmonyEvent::Kind;
    pending_ += text;
    while (!pending_.empty()) {
        if (state_ == State::Outside && at_output_start_) {
            // " to=functions.f<|channel|>...": the prompt's "<|start|>assistant" began this header.
            constexpr std::string_view kRecipient = "to=";
            const std::string_view rest = std::string_view(pending_).substr(
                std::min(pending_.find_first_not_of(" \t\r\n"), pending_.size()));
            if (rest.size() < kRecipient.size() && kRecipient.substr(0, rest.size()) == rest) break;  // may be one
            at_output_start_ = false;
            if (rest.substr(0, kRecipient.size()) == kRecipient) state_ = State::Header;
        } else if (state_ == State::Outside) {
            const MarkerMatch start = find_first_marker(pending_, kHeaderStarts);
            if (!start.found()) {
                const size_t keep = partial_marker_length(pending_, kHeaderStarts);
                emit(Kind::OutsideText, std::string_view(pending_).substr(0, pending_.size() - keep));
                pending_.erase(0, pending_.size() - keep);
                break;
            }
            emit(Kind::OutsideText, std::string_view(pending_).substr(0, start.position));
            pending_.erase(0, start.position);
            state_ = State::Header;
        } else if (state_ == State::Header) {
            // The header runs from pending_[0] (a start marker) to "<|message|>";
            // a new "<|start|>" first means this one was not a header.
            const MarkerMatch end = find_first_marker(std::string_view(pending_).substr(1), {kMessage, kStart});
            const size_t at = end.found() ? end.position + 1 : std::string::npos;
            if (at != std::string::npos && at <= kMaxHeader && end.marker == 0) {
                events_.push_back({Kind::MessageStart, "", parse_harmony_header(pending_.substr(0, at + kMessage.size()))});
                pending_.erase(0, at + kMessage.size());
                state_ = State::Body;
            } else if (at != std::string::npos && at <= kMaxHeader) {
                emit(Kind::OutsideText, std::string_view(pending_).substr(0, at));
                pending_.erase(0, at);
            } else if (pending_.size() >= kMaxHeader + kMessage.size()) {
                emit(Kind::OutsideText, std::string_view(pending_).substr(0, kMaxHeader));
                pending_.erase(0, kMaxHeader);
                state_ = State::Outside;
            } else {
                break;
            }
        } else {
            const MarkerMatch end = find_first_marker(pending_, kBodyEnds);
            if (!end.found()) {
                const size_t keep = partial_marker_length(pending_, kBodyEnds);
                emit(Kind::BodyText, std::string_view(pending_).substr(0, pending_.size() - keep));
                pending_.erase(0, pending_.size() - keep);
                break;
            }
            emit(Kind::BodyText, std::string_view(pending_).substr(0, end.position));
            const std::string_view marker = kBodyEnds[end.marker];
            if (marker == kStart) {
                pending_.erase(0, end.position);
                state_ = State::Header;
                emit(Kind::MessageEnd, "");
            } else {
                pending_.erase(0, end.position + marker.size());
                state_ = State::Outside;
                emit(Kind::MessageEnd, marker);
            }
        }
    }
    return std::exchange(events_, {});
}

std::vector<HarmonyEvent> HarmonyReader::finish() {
    if (state_ == State::Body) {
        emit(HarmonyEvent::Kind::BodyText, pending_);
        events_.push_back({HarmonyEvent::Kind::MessageEnd, "", {}, /*at_output_end=*/true});
    } else {
        emit(HarmonyEvent::Kind::OutsideText, pending_);
    }
    pending_.clear();
    state_ = State::Outside;
    return std::exchange(events_, {});
}

}  // namespace vllm::chat
