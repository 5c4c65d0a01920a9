#include "chat/reasoning_parsers/think_tag_parser.h"

#include <vector>

#include "chat/marker_scan.h"

namespace vllm::chat {

ThinkTagParser::ThinkTagParser(std::string open_tag, std::string close_tag, Phase start)
    : open_tag_(std::move(open_tag)), close_tag_(std::move(close_tag)), phase_(start) {}

void ThinkTagParser::emit(std::string_view text, ReasoningDelta& out) const {
    (phase_ == Phase::Reasoning ? out.reasoning : out.content) += text;
}

ReasoningDelta ThinkTagParser::feed(std::string_view text) {
    ReasoningDelta out;
    pending_ += text;
    while (!pending_.empty()) {
        if (phase_ == Phase::AfterReasoning) {
            emit(pending_, out);
            pending_.clear();
            break;
        }
        // Tags that still change something: the opening tag only until it has been seen.
        std::vector<std::string_view> tags{close_tag_};
        if (!open_tag_seen_) tags.push_back(open_tag_);
        const MarkerMatch match = find_first_marker(pending_, tags);
        if (!match.found()) {
            const size_t keep = partial_marker_length(pending_, tags);
            emit(std::string_view(pending_).substr(0, pending_.size() - keep), out);
            pending_.erase(0, pending_.size() - keep);
            break;
        }
        emit(std::string_view(pending_).substr(0, match.position), out);
        pending_.erase(0, match.position + tags[match.marker].size());
        if (tags[match.marker] == close_tag_) {
            phase_ = Phase::AfterReasoning;
        } else {
            open_tag_seen_ = true;
            phase_ = Phase::Reasoning;
        }
    }
    return out;
}

ReasoningDelta ThinkTagParser::finish() {
    ReasoningDelta out;
    emit(pending_, out);
    pending_.clear();
    return out;
}

}  // namespace vllm::chat
