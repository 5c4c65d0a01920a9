// Suffix decoding ("suffix", vLLM's SuffixDecodingProposer after Arctic
// Inference): a suffix tree over each request's own prompt and output, and
// one over the outputs of the last suffix_decoding_max_cached_requests
// finished requests (evicted first in, first out; 0: none). Each step both
// trees are matched against the end of the sequence and the draft with the
// higher score (the sum of its tokens' estimated probabilities) is proposed.
#pragma once
#include <deque>
#include <unordered_map>

#include "spec_decode/proposer.h"
#include "spec_decode/suffix_tree.h"

namespace vllm {

class SuffixProposer final : public Proposer {
public:
    explicit SuffixProposer(const SpeculativeConfig& config);

    void propose(uint64_t id, const std::vector<int32_t>& tokens, int num_prompt_tokens, int max_tokens,
                 std::vector<int32_t>& draft) override;
    void finished(uint64_t id, const std::vector<int32_t>& tokens, int num_prompt_tokens, bool completed) override;

    int num_cached_outputs() const { return static_cast<int>(cached_outputs_.size()); }

private:
    struct RequestTree {
        SuffixTree tree;
        size_t ingested = 0;  // tokens appended to `tree` so far
    };

    int max_depth_;
    int max_cached_requests_;
    double max_spec_factor_;
    double min_token_prob_;
    std::unordered_map<uint64_t, RequestTree> requests_;
    SuffixTree global_;
    std::deque<std::vector<int32_t>> cached_outputs_;  // what global_ holds, oldest first
};

}  // namespace vllm
