// A suffix trie of bounded depth with occurrence counts: every substring of
// at most max_depth tokens of the sequences added is a path from the root,
// its node counting the occurrences. Suffix decoding (SuffixProposer) keeps
// one per request, grown token by token, and one over recent requests'
// outputs, from which whole sequences are also removed again.
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace vllm {

class SuffixTree {
public:
    explicit SuffixTree(int max_depth);

    // Grows the one sequence this tree follows by `token` (per-request use).
    void append(int32_t token);
    // Adds or removes a whole sequence (every substring of at most max_depth
    // tokens); `remove` takes back exactly what `add` of the same tokens added.
    void add(const std::vector<int32_t>& tokens);
    void remove(const std::vector<int32_t>& tokens);

    struct Draft {
        std::vector<int32_t> tokens;
        double score = 0.0;  // the sum of the tokens' estimated probabilities
    };
    // The best-scoring draft over every suffix of `context` (n tokens) seen
    // followed by something: from each, the most frequent continuation
    // while the estimated probability of the whole draft (the product of each
    // step's share among the continuations seen) stays >= min_prob, for at
    // most min(max_tokens, max_spec_factor * match length, max_depth - match
    // length) tokens.
    Draft speculate(const int32_t* context, int n, int max_tokens, double max_spec_factor, double min_prob) const;

    int num_nodes() const { return static_cast<int>(nodes_.size() - free_.size()); }

private:
    struct Node {
        int32_t count = 0;
        int32_t parent = -1;
        int32_t token = -1;
        int32_t depth = 0;  // tokens on the path from the root
        std::vector<int32_t> children;  // node indices
    };
    int32_t child(int32_t node, int32_t token) const;  // -1 when absent
    // The most frequent path below `node`, as speculate() describes, of at most `limit` tokens.
    Draft continuation(int32_t node, int limit, double min_prob) const;
    int32_t child_or_new(int32_t node, int32_t token);
    void release(int32_t node);  // a node whose count fell to zero
    // Adds `delta` along tokens[begin, begin + depth) from the root.
    void walk(const std::vector<int32_t>& tokens, size_t begin, int delta);
    static uint64_t edge(int32_t node, int32_t token) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(node)) << 32) | static_cast<uint32_t>(token);
    }

    int max_depth_;
    std::vector<Node> nodes_;  // nodes_[0] is the root
    std::vector<int32_t> free_;
    std::unordered_map<uint64_t, int32_t> edges_;  // (parent, token) -> child
    std::vector<int32_t> active_;  // append(): the nodes of the suffixes still shorter than max_depth
};

}  // namespace vllm
