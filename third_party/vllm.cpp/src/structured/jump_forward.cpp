#include "structured/jump_forward.h"

#include <vector>

namespace vllm::structured {

namespace {
// Length of `s` without a trailing incomplete UTF-8 sequence.
size_t whole_characters(const std::string& s) {
    size_t start = s.size();
    for (size_t back = 0; back < 4 && start > 0; ++back) {
        const unsigned char c = static_cast<unsigned char>(s[start - 1]);
        if ((c & 0xC0) != 0x80) {
            --start;  // the lead byte of the last sequence (or an ASCII byte)
            const size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
            return s.size() - start >= need ? s.size() : start;
        }
        --start;
    }
    return s.size();
}
}  // namespace

std::string forced_bytes(ParserStates& states, int32_t state, size_t max_len) {
    std::string out;
    while (out.size() < max_len && !states.can_end(state)) {
        const int b = states.allowed_bytes(state).only_member();
        if (b < 0) break;
        out += static_cast<char>(b);
        state = states.next(state, static_cast<uint8_t>(b));
    }
    out.resize(whole_characters(out));
    return out;
}

int32_t forced_first_token(const Vocabulary& vocabulary, ParserStates& states, int32_t state) {
    const std::string forced = forced_bytes(states, state);
    if (forced.empty()) return -1;
    const std::vector<int32_t> tokens = vocabulary.tokenize(forced);
    if (tokens.size() < 2) return -1;
    const int32_t first = tokens[0];
    if (first < 0 || first >= vocabulary.size()) return -1;
    // Only a token the grammar could sample anyway (never a control token).
    const std::string_view bytes = vocabulary.token_bytes(first);
    if (bytes.empty() || forced.compare(0, bytes.size(), bytes) != 0) return -1;
    return first;
}

}  // namespace vllm::structured
