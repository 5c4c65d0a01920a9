#include "structured/token_trie.h"

#include <algorithm>
#include <numeric>

namespace vllm::structured {

TokenTrie::TokenTrie(const std::vector<std::string_view>& token_bytes) {
    // Sorted byte strings list the trie in preorder: each token adds the
    // nodes for the bytes past its common prefix with the previous one.
    std::vector<int32_t> order;
    for (size_t id = 0; id < token_bytes.size(); ++id)
        if (!token_bytes[id].empty()) order.push_back(static_cast<int32_t>(id));
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return token_bytes[a] < token_bytes[b] || (token_bytes[a] == token_bytes[b] && a < b);
    });

    std::vector<int32_t> path;  // node index at each depth of the current branch
    std::vector<int32_t> tokens_at_node;
    const std::string_view* previous = nullptr;
    for (int32_t id : order) {
        const std::string_view& s = token_bytes[id];
        size_t common = 0;
        if (previous) {
            while (common < s.size() && common < previous->size() && s[common] == (*previous)[common]) ++common;
        }
        path.resize(common);
        for (size_t d = common; d < s.size(); ++d) {
            path.push_back(static_cast<int32_t>(byte_.size()));
            byte_.push_back(static_cast<uint8_t>(s[d]));
            depth_.push_back(static_cast<int32_t>(d + 1));
            tokens_at_node.push_back(0);
        }
        ++tokens_at_node[path.back()];
        token_ids_.push_back(id);
        max_depth_ = std::max(max_depth_, static_cast<int32_t>(s.size()));
        previous = &s;
    }

    // A subtree ends at the next node that is no deeper than its root.
    const int32_t n = node_count();
    subtree_end_.assign(n, n);
    std::vector<int32_t> open;
    for (int32_t i = 0; i < n; ++i) {
        while (!open.empty() && depth_[open.back()] >= depth_[i]) {
            subtree_end_[open.back()] = i;
            open.pop_back();
        }
        open.push_back(i);
    }

    token_begin_.assign(n + 1, 0);
    std::partial_sum(tokens_at_node.begin(), tokens_at_node.end(), token_begin_.begin() + 1);
}

}  // namespace vllm::structured
