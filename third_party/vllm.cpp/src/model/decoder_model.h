// What the engine runs: a decoder's forward over a batch that mixes
// sequences in prefill and in decode (matmuls see all tokens at once,
// attention reads each sequence's K/V through its block table). Each
// architecture family implements it (model/architectures/, built by the
// registry, model_registry.h); the engine holds one per loaded model and
// calls it once per step, so the virtual call costs one dispatch a forward.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "kv_cache/kv_cache.h"
#include "model/model_config.h"
#include "util/thread_pool.h"

namespace vllm {

struct LoraAdapter;

// One sequence's slice of a forward batch.
struct SequenceSlice {
    const int32_t* tokens = nullptr;     // the new tokens to run
    int n_tokens = 0;
    int start_pos = 0;                   // position of tokens[0]; K/V of [0, start_pos) is cached
    // Per KV cache group (KVCache::group_of), the block table covering
    // positions [0, start_pos + n_tokens); a sliding-window group's entries
    // before the window are kNullBlock.
    std::array<const int32_t*, kMaxKvCacheGroups> block_tables{};
    // Logits of the slice's last num_logits tokens (0: none; 1: the next
    // token's; k + 1: a speculative step verifying k draft tokens).
    int num_logits = 0;
    // A pooling request's chunk: when set, receives the final-normed hidden
    // state of each of the slice's n_tokens tokens (config().dim floats per row).
    float* hidden_rows = nullptr;
    // The LoRA adapter the sequence runs (model/lora_adapter.h); nullptr:
    // the base model. Kept alive by the engine for the forward.
    const LoraAdapter* lora = nullptr;
    // An encoder's sentence pair: the position of the second segment's
    // first token (token type 1 from there on); 0: every token is type 0.
    int second_segment_start = 0;
};

class DecoderModel {
public:
    virtual ~DecoderModel() = default;

    virtual const ModelConfig& config() const = 0;

    // Runs the batch, writing the new K/V into `cache`. `logits` receives
    // num_logits rows of logit_count() floats per slice, in batch and token order.
    // Not reentrant (scratch buffers are members): the engine step owns it.
    virtual void forward(const std::vector<SequenceSlice>& batch, KVCache& cache, ThreadPool& pool,
                         std::vector<float>& logits) = 0;

    // Logits of token ids [0, logit_count()) only: vocab_size unless
    // limited. A draft model proposing only the first `tokens` ids (a
    // reduced drafting vocabulary) reads that many rows of the output
    // matrix per forward instead of all of them; rounded up to whole
    // interleaved row groups, at most vocab_size.
    virtual void limit_logits(int64_t tokens) = 0;
    virtual int64_t logit_count() const = 0;

    // The weights LoRA adapters are checked against (model/lora_adapter.h);
    // nullptr: this model runs no adapters.
    virtual const struct ModelWeights* weights() const { return nullptr; }
};

}  // namespace vllm
