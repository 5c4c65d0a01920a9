#include "chat/marker_scan.h"

#include <algorithm>

namespace vllm::chat {

MarkerMatch find_first_marker(std::string_view text, const std::vector<std::string_view>& markers) {
    MarkerMatch best;
    for (size_t i = 0; i < markers.size(); ++i) {
        if (markers[i].empty()) continue;
        const size_t pos = text.find(markers[i]);
        if (pos != std::string_view::npos && (!best.found() || pos < best.position)) {
            best.position = pos;
            best.marker = i;
        }
    }
    return best;
}

size_t partial_marker_length(std::string_view text, const std::vector<std::string_view>& markers) {
    size_t longest = 0;
    for (std::string_view marker : markers) {
        const size_t max_len = std::min(text.size(), marker.empty() ? 0 : marker.size() - 1);
        for (size_t len = max_len; len > longest; --len) {
            if (text.substr(text.size() - len) == marker.substr(0, len)) {
                longest = len;
                break;
            }
        }
    }
    return longest;
}

}  // namespace vllm::chat
