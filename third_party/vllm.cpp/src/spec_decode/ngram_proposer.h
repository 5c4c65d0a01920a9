// Prompt lookup ("ngram", vLLM's NgramProposer): the longest n-gram ending
// the sequence, n in [prompt_lookup_min, prompt_lookup_max], is looked up
// earlier in the prompt and output; the tokens that followed its latest
// earlier occurrence are the draft. Stateless.
#pragma once
#include "spec_decode/proposer.h"

namespace vllm {

class NgramProposer final : public Proposer {
public:
    NgramProposer(int min_n, int max_n) : min_n_(min_n), max_n_(max_n) {}

    void propose(uint64_t id, const std::vector<int32_t>& tokens, int num_prompt_tokens, int max_tokens,
                 std::vector<int32_t>& draft) override;
    void finished(uint64_t, const std::vector<int32_t>&, int, bool) override {}

private:
    int min_n_, max_n_;
};

}  // namespace vllm
