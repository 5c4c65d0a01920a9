// Finding fixed markers (tags such as "<think>" or "[TOOL_CALLS]") in text
// that arrives in pieces. A streaming parser may only release text that
// cannot be the start of a marker, so it holds back the longest tail that is
// a prefix of one and looks again when more text comes.
#pragma once
#include <cstddef>
#include <string_view>
#include <vector>

namespace vllm::chat {

struct MarkerMatch {
    size_t position = std::string_view::npos;  // npos: no marker in the text
    size_t marker = 0;                         // index into the markers searched
    bool found() const { return position != std::string_view::npos; }
};

// The earliest complete occurrence of any marker (the first listed wins a tie).
MarkerMatch find_first_marker(std::string_view text, const std::vector<std::string_view>& markers);

// Length of the longest tail of `text` that is a proper prefix of a marker:
// the bytes a streaming parser must hold back until it sees what follows.
size_t partial_marker_length(std::string_view text, const std::vector<std::string_view>& markers);

// Whether `text` ends with `marker`.
inline bool ends_with(std::string_view text, std::string_view marker) {
    return text.size() >= marker.size() && text.substr(text.size() - marker.size()) == marker;
}

}  // namespace vllm::chat
