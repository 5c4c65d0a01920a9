// The vocabulary as a byte trie laid out in preorder, built once per engine.
//
// Node i has the byte on its incoming edge, its depth, and the index just
// past its subtree, so a mask walk is a single forward loop that jumps over
// a whole subtree as soon as its prefix is rejected. Tokens hang off the
// node their last byte reaches (several when two tokens spell the same
// bytes).
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace vllm::structured {

class TokenTrie {
public:
    // token_bytes[id]: the bytes of token id; empty ones (control tokens)
    // are left out of the trie.
    explicit TokenTrie(const std::vector<std::string_view>& token_bytes);

    int32_t node_count() const { return static_cast<int32_t>(byte_.size()); }
    int32_t max_depth() const { return max_depth_; }

    uint8_t byte(int32_t node) const { return byte_[node]; }
    int32_t depth(int32_t node) const { return depth_[node]; }  // 1 for children of the root
    int32_t subtree_end(int32_t node) const { return subtree_end_[node]; }
    // Tokens ending at the node: token_ids()[token_begin(node) .. token_begin(node + 1)).
    int32_t token_begin(int32_t node) const { return token_begin_[node]; }
    const std::vector<int32_t>& token_ids() const { return token_ids_; }

    // Raw arrays for the mask walk's inner loop.
    const uint8_t* bytes_data() const { return byte_.data(); }
    const int32_t* depths_data() const { return depth_.data(); }
    const int32_t* subtree_ends_data() const { return subtree_end_.data(); }
    const int32_t* token_begins_data() const { return token_begin_.data(); }

private:
    std::vector<uint8_t> byte_;
    std::vector<int32_t> depth_;
    std::vector<int32_t> subtree_end_;
    std::vector<int32_t> token_begin_;  // node_count + 1 entries
    std::vector<int32_t> token_ids_;
    int32_t max_depth_ = 0;
};

}  // namespace vllm::structured
