#include "structured/token_mask.h"

namespace vllm::structured {

void add_accepted_tokens(const TokenTrie& trie, ParserStates& states, int32_t state, std::vector<uint64_t>& bits) {
    const int32_t n = trie.node_count();
    const uint8_t* bytes = trie.bytes_data();
    const int32_t* depths = trie.depths_data();
    const int32_t* ends = trie.subtree_ends_data();
    const int32_t* token_begins = trie.token_begins_data();
    const int32_t* token_ids = trie.token_ids().data();

    // state_at[d]: the parser state after the first d bytes of the current branch.
    std::vector<int32_t> state_at(static_cast<size_t>(trie.max_depth()) + 1);
    state_at[0] = state;
    for (int32_t i = 0; i < n;) {
        const int32_t s = states.next(state_at[depths[i] - 1], bytes[i]);
        if (s == ParserStates::kDead) {
            i = ends[i];
            continue;
        }
        state_at[depths[i]] = s;
        for (int32_t t = token_begins[i]; t < token_begins[i + 1]; ++t) set_bit(bits, token_ids[t]);
        ++i;
    }
}

}  // namespace vllm::structured
