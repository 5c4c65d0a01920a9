#include "spec_decode/proposer.h"

#include "spec_decode/ngram_proposer.h"
#include "spec_decode/suffix_proposer.h"
#include "util/error.h"

namespace vllm {

void Proposer::propose_batch(const std::vector<DraftRequest>& batch) {
    for (const DraftRequest& r : batch) propose(r.id, *r.tokens, r.num_prompt_tokens, r.max_tokens, *r.draft);
}

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config) {
    if (config.method == SpeculativeMethod::SUFFIX) return std::make_unique<SuffixProposer>(config);
    if (config.method == SpeculativeMethod::DRAFT_MODEL)
        throw_runtime("make_proposer: the draft model's proposer is built from the loaded draft");
    return std::make_unique<NgramProposer>(config.prompt_lookup_min, config.prompt_lookup_max);
}

}  // namespace vllm
