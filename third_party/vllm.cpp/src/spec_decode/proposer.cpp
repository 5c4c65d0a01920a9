#include "spec_decode/proposer.h"

#include "spec_decode/ngram_proposer.h"
#include "spec_decode/suffix_proposer.h"

namespace vllm {

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config) {
    if (config.method == SpeculativeMethod::SUFFIX) return std::make_unique<SuffixProposer>(config);
    return std::make_unique<NgramProposer>(config.prompt_lookup_min, config.prompt_lookup_max);
}

}  // namespace vllm
