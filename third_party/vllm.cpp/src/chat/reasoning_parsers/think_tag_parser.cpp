#include "chat/reasoning_parsers/think_tag_parser.h"

#include <vector>

#include "chat/marker_scan.h"

namespace vllm::chat {

ThinkTagParser::ThinkTagParser(std::string open_tag, std::string close_tag, Phase start)
    : ThinkTagParser(std::vector<std::string>{std::move(open_tag)}, std::vector<std::string>{std::move(close_tag)},
                     start) {}

ThinkTagParser::ThinkTagParser(std::vector<std::string> open_tags, std::vector<std::string> close_tags, Phase start,
                               bool stray_close_is_content)
    : open_tags_(std::move(open_tags)),
      close_tags_(std::move(close_tags)),
      phase_(start),
      stray_close_is_content_(stray_close_is_content) {}

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
        // Closing tags first: an index below `closing` is a closing tag.
        std::vector<std::string_view> tags;
        if (phase_ == Phase::Reasoning || !stray_close_is_content_) tags.assign(close_tags_.begin(), close_tags_.end());
        const size_t closing = tags.size();
        if (!open_tag_seen_) tags.insert(tags.end(), open_tags_.begin(), open_tags_.end());
        const MarkerMatch match = find_first_marker(pending_, tags);
        if (!match.found()) {
            const size_t keep = partial_marker_length(pending_, tags);
            emit(std::string_view(pending_).substr(0, pending_.size() - keep), out);
            pending_.erase(0, pending_.size() - keep);
            break;
        }
        emit(std::string_view(pending_).substr(0, match.position), out);
        pending_.erase(0, match.position + tags[match.marker].size());
        if (match.marker < closing) {
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
