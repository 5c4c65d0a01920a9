#include "spec_decode/suffix_proposer.h"

#include <algorithm>

namespace vllm {

SuffixProposer::SuffixProposer(const SpeculativeConfig& c)
    : max_depth_(c.suffix_decoding_max_tree_depth),
      max_cached_requests_(c.suffix_decoding_max_cached_requests),
      max_spec_factor_(c.suffix_decoding_max_spec_factor),
      min_token_prob_(c.suffix_decoding_min_token_prob),
      global_(c.suffix_decoding_max_tree_depth) {}

void SuffixProposer::propose(uint64_t id, const std::vector<int32_t>& tokens, int, int max_tokens,
                             std::vector<int32_t>& draft) {
    draft.clear();
    RequestTree& own = requests_.try_emplace(id, RequestTree{SuffixTree(max_depth_), 0}).first->second;
    for (; own.ingested < tokens.size(); ++own.ingested) own.tree.append(tokens[own.ingested]);
    if (max_tokens <= 0 || tokens.empty()) return;
    // Only the last max_depth tokens can be part of a match.
    const int n = static_cast<int>(std::min(tokens.size(), static_cast<size_t>(max_depth_)));
    const int32_t* context = tokens.data() + tokens.size() - n;
    SuffixTree::Draft best = own.tree.speculate(context, n, max_tokens, max_spec_factor_, min_token_prob_);
    if (!cached_outputs_.empty()) {
        SuffixTree::Draft other = global_.speculate(context, n, max_tokens, max_spec_factor_, min_token_prob_);
        if (other.score > best.score) best = std::move(other);
    }
    draft = std::move(best.tokens);
}

void SuffixProposer::finished(uint64_t id, const std::vector<int32_t>& tokens, int num_prompt_tokens,
                              bool completed) {
    requests_.erase(id);
    // Only outputs that ran to their end teach later requests.
    if (!completed || max_cached_requests_ == 0 || static_cast<int>(tokens.size()) <= num_prompt_tokens) return;
    cached_outputs_.emplace_back(tokens.begin() + num_prompt_tokens, tokens.end());
    global_.add(cached_outputs_.back());
    if (static_cast<int>(cached_outputs_.size()) > max_cached_requests_) {
        global_.remove(cached_outputs_.front());
        cached_outputs_.pop_front();
    }
}

}  // namespace vllm
