#include "spec_decode/suffix_tree.h"

#include <algorithm>

namespace vllm {

SuffixTree::SuffixTree(int max_depth) : max_depth_(max_depth), nodes_(1) {}

int32_t SuffixTree::child(int32_t node, int32_t token) const {
    auto it = edges_.find(edge(node, token));
    return it == edges_.end() ? -1 : it->second;
}

int32_t SuffixTree::child_or_new(int32_t node, int32_t token) {
    auto [it, inserted] = edges_.try_emplace(edge(node, token), -1);
    if (!inserted) return it->second;
    int32_t id;
    if (!free_.empty()) {
        id = free_.back();
        free_.pop_back();
        nodes_[id] = Node{};
    } else {
        id = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
    }
    nodes_[id].parent = node;
    nodes_[id].token = token;
    nodes_[id].depth = nodes_[node].depth + 1;
    nodes_[node].children.push_back(id);
    it->second = id;
    return id;
}

void SuffixTree::release(int32_t id) {
    Node& n = nodes_[id];
    std::vector<int32_t>& siblings = nodes_[n.parent].children;
    siblings.erase(std::find(siblings.begin(), siblings.end(), id));
    edges_.erase(edge(n.parent, n.token));
    // Its children's counts are at most its own, so they are gone already.
    n = Node{};
    free_.push_back(id);
}

void SuffixTree::append(int32_t token) {
    // Every suffix shorter than max_depth grows by the token, and a new one starts.
    active_.push_back(0);
    size_t kept = 0;
    for (int32_t node : active_) {
        const int32_t next = child_or_new(node, token);
        ++nodes_[next].count;
        if (nodes_[next].depth < max_depth_) active_[kept++] = next;
    }
    active_.resize(kept);
}

void SuffixTree::walk(const std::vector<int32_t>& tokens, size_t begin, int delta) {
    const size_t end = std::min(tokens.size(), begin + static_cast<size_t>(max_depth_));
    int32_t node = 0;
    std::vector<int32_t> path;
    for (size_t i = begin; i < end; ++i) {
        node = delta > 0 ? child_or_new(node, tokens[i]) : child(node, tokens[i]);
        if (node < 0) return;  // remove() of tokens never added: nothing to take back
        nodes_[node].count += delta;
        path.push_back(node);
    }
    // Release emptied nodes deepest first, so a parent never goes before its child.
    for (auto it = path.rbegin(); it != path.rend(); ++it)
        if (nodes_[*it].count <= 0) release(*it);
}

void SuffixTree::add(const std::vector<int32_t>& tokens) {
    for (size_t i = 0; i < tokens.size(); ++i) walk(tokens, i, +1);
}

void SuffixTree::remove(const std::vector<int32_t>& tokens) {
    for (size_t i = 0; i < tokens.size(); ++i) walk(tokens, i, -1);
}

SuffixTree::Draft SuffixTree::speculate(const int32_t* context, int n, int max_tokens, double max_spec_factor,
                                        double min_prob) const {
    // Every suffix of the context that the tree holds, followed by something,
    // is a candidate: a longer match predicts more surely, a shorter one
    // leaves its path more depth to continue in (paths end at max_depth).
    // Taking the longest alone cut a long copy's drafts to one token. The
    // best score (the expected accepted tokens) wins, a longer match on a
    // tie, as in Arctic Inference's suffix decoding.
    Draft best;
    for (int m = 1; m <= std::min(n, max_depth_ - 1); ++m) {
        // Walked from the root: a suffix one token longer is not a child of this one.
        int32_t node = 0;
        for (int i = n - m; i < n && node >= 0; ++i) node = child(node, context[i]);
        if (node < 0) break;  // no longer suffix is in the tree either
        if (nodes_[node].children.empty()) continue;
        const int limit = std::min({max_tokens, static_cast<int>(max_spec_factor * m), max_depth_ - m});
        Draft draft = continuation(node, limit, min_prob);
        if (!draft.tokens.empty() && draft.score >= best.score) best = std::move(draft);
    }
    return best;
}

SuffixTree::Draft SuffixTree::continuation(int32_t node, int limit, double min_prob) const {
    Draft draft;
    double prob = 1.0;
    while (static_cast<int>(draft.tokens.size()) < limit) {
        const Node& here = nodes_[node];
        int64_t seen = 0;
        int32_t best = -1;
        for (int32_t c : here.children) {
            seen += nodes_[c].count;
            if (best < 0 || nodes_[c].count > nodes_[best].count ||
                (nodes_[c].count == nodes_[best].count && nodes_[c].token < nodes_[best].token))
                best = c;
        }
        if (best < 0) break;
        prob *= static_cast<double>(nodes_[best].count) / static_cast<double>(seen);
        if (prob < min_prob) break;
        draft.tokens.push_back(nodes_[best].token);
        draft.score += prob;
        node = best;
    }
    return draft;
}

}  // namespace vllm
