// Per-step allowed-token masks: one walk of the vocabulary trie with the
// parser state, pruning every subtree whose prefix the grammar rejects.
#pragma once
#include <cstdint>
#include <vector>

#include "structured/parser_states.h"
#include "structured/token_trie.h"

namespace vllm::structured {

// Sets bit `id` of `bits` (which must hold vocab_size bits, cleared by the
// caller) for every trie token whose bytes the parser accepts from `state`.
void add_accepted_tokens(const TokenTrie& trie, ParserStates& states, int32_t state, std::vector<uint64_t>& bits);

inline void set_bit(std::vector<uint64_t>& bits, int32_t id) {
    bits[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
}
inline bool test_bit(const std::vector<uint64_t>& bits, int32_t id) {
    return (bits[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1;
}

}  // namespace vllm::structured
