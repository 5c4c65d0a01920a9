// Draft-model speculation ("draft_model", vLLM's DraftModelProposer): a
// smaller model of the same vocabulary runs in the same engine with its own
// paged KV cache and guesses the next k tokens of every speculating request,
// batched: one draft forward per draft position over all of them (the first
// also catches each request up on the tokens the target accepted since).
//
// The draft's KV follows the request: each request owns a block table in
// the draft's own block pool and the list of tokens whose K/V it holds
// (`fed`). Rollback is a prefix match: whatever the target rejected no
// longer matches the request's tokens and is recomputed over. Finishing,
// aborting or preempting a request gives its blocks back (finished,
// release_cache); a request that gets no blocks simply gets no draft.
// The draft has a prefix cache of its own, as the target has: full blocks
// of a request's verified tokens are cached under the target's block
// hashes (block_hash_chain.h), and a request starting to draft takes over
// the cached blocks of its prefix instead of recomputing them, so a shared
// system prompt or a repeated prompt is not prefilled twice by the draft.
//
// Greedy requests get the draft's argmax; sampled ones a draw from the
// draft's own distribution q (its logits at the request's temperature,
// min-p, top-k and top-p), kept for verification (draft_probabilities):
// the rejection sampler's rule with the real q keeps the output
// distribution the target's.
//
// A request's draft ends early after a token the draft itself gave less
// than the confidence threshold (speculative_config.h): the draft's
// probability of its argmax, or q of its draw. The rule reads nothing but
// the draft's distribution, so verification stays exact.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>

#include "core/block_pool.h"
#include "formats/model_source.h"
#include "kv_cache/kv_cache.h"
#include "model/decoder_model.h"
#include "sample/sampler.h"
#include "spec_decode/proposer.h"
#include "tokenizer/tokenizer.h"
#include "util/thread_pool.h"

namespace vllm {

// A loaded draft model: the weights point into `source`.
struct DraftModel {
    std::unique_ptr<ModelSource> source;
    std::unique_ptr<DecoderModel> model;
};

// INVALID_ARGUMENT naming speculative_config's 'model' unless `draft`
// has exactly the target's tokens (count, and each id's text).
void check_draft_vocabulary(const Tokenizer& target, const Tokenizer& draft, const std::string& model_path);

class DraftModelProposer final : public Proposer {
public:
    // `num_blocks` blocks of `block_size` slots per draft layer.
    DraftModelProposer(DraftModel draft, int num_blocks, int block_size, KvDtype kv_dtype,
                       double confidence_threshold, ThreadPool& pool);

    void propose_batch(const std::vector<DraftRequest>& batch) override;
    // One request alone, drafting greedily (no generator needed).
    void propose(uint64_t id, const std::vector<int32_t>& tokens, int num_prompt_tokens, int max_tokens,
                 std::vector<int32_t>& draft) override;
    void finished(uint64_t id, const std::vector<int32_t>&, int, bool) override { release_cache(id); }
    const std::vector<float>* draft_probabilities(uint64_t id) const override;
    void release_cache(uint64_t id) override;

    int num_free_blocks() const { return blocks_.num_free(); }
    int num_blocks() const { return blocks_.num_blocks(); }

private:
    struct Sequence {
        std::vector<int32_t> fed;     // the tokens whose K/V the draft cache holds, from position 0
        std::vector<int32_t> blocks;  // the draft cache's block table
        std::vector<float> probs;     // per draft token of the last proposal: q (empty: greedy)
        std::vector<uint64_t> hashes;  // of the request's full blocks (block_hash_chain.h)
        int num_cached_blocks = 0;     // blocks[0, n) are in the prefix cache
    };
    // A sequence with no K/V yet takes the cached blocks of its prefix
    // (never the one holding its last token, which is always run).
    void adopt_cached_prefix(Sequence& s, const std::vector<int32_t>& tokens);
    // Caches the full blocks of s's first `verified` tokens.
    void cache_verified_blocks(Sequence& s, const std::vector<int32_t>& tokens, size_t verified);
    // Blocks covering positions [0, positions); false (nothing taken) when
    // the pool cannot supply them.
    bool reserve(Sequence& s, int positions);
    // The next draft token from one logits row, recording q when sampled.
    // `confident`: whether the draft gave that token at least the
    // confidence threshold.
    int32_t choose(const DraftRequest& r, float* logits, Sequence& s, bool& confident);

    DraftModel draft_;
    KVCache cache_;
    BlockPool blocks_;
    int block_size_;
    double confidence_threshold_;
    ThreadPool& pool_;
    Sampler sampler_;
    std::unordered_map<uint64_t, Sequence> sequences_;
    std::vector<float> logits_;
};

}  // namespace vllm
