#include "model/blocks/paged_attention.h"

#include "kernels/cpu/ops.h"
#include "util/error.h"

#include <algorithm>
#include <string>

namespace vllm {

namespace {

// Keys per split of a long attention tile (a multiple of the attention
// kernel's key chunk); see paged_attention().
constexpr int kKeysPerSplit = 512;

}  // namespace

void paged_attention(const ModelConfig& c, const std::vector<SequenceSlice>& batch, int layer,
                     const std::vector<int32_t>& positions, const float* q, const float* k, const float* v,
                     float* out, KVCache& cache, ThreadPool& pool, const float* sinks) {
    // The layer's own K/V shape (kv_layer_shape.h): query heads are as
    // wide as its keys, and its values as wide again.
    const KvLayerShape& shape = cache.shape(layer);
    if (!shape.holds_kv() || shape.v_head_dim != shape.k_head_dim || c.n_heads % shape.n_kv_heads != 0)
        throw_runtime("paged_attention: layer " + std::to_string(layer) + " keeps no K and V of one head size");
    const int n_kv_heads = shape.n_kv_heads, hd = shape.k_head_dim, group = c.n_heads / n_kv_heads;
    const int kv_dim = n_kv_heads * hd, bs = cache.block_size();

    // Store this step's K/V first: a token attends to every earlier token of
    // its sequence, including those in this very batch.
    std::vector<kernels::AttentionTile> tiles;
    const int64_t tokens_per_tile = std::max(1, kernels::attention_max_queries(hd) / group);
    int64_t t0 = 0;
    const int kv_group = cache.group_of(layer);
    for (const SequenceSlice& sl : batch) {
        const int32_t* block_table = sl.block_tables[kv_group];
        for (int i = 0; i < sl.n_tokens && k != nullptr; ++i) {
            const int pos = sl.start_pos + i;
            const int32_t block = block_table[pos / bs];
            cache.store_key(layer, block, pos % bs, &k[(t0 + i) * kv_dim]);
            cache.store_value(layer, block, pos % bs, &v[(t0 + i) * kv_dim]);
        }
        for (int64_t t = t0; t < t0 + sl.n_tokens; t += tokens_per_tile)
            for (int h = 0; h < n_kv_heads; ++h) {
                kernels::AttentionTile tile;
                tile.block_table = block_table;
                tile.t_begin = t;
                tile.t_end = std::min<int64_t>(t + tokens_per_tile, t0 + sl.n_tokens);
                tile.kv_head = h;
                tiles.push_back(tile);
            }
        t0 += sl.n_tokens;
    }

    kernels::PagedAttention a;
    a.q = q;
    a.out = out;
    a.positions = positions.data();
    a.k_cache = cache.layer_keys(layer);
    a.v_cache = cache.layer_values(layer);
    a.kv_dtype = cache.dtype();
    a.block_size = bs;
    a.n_heads = c.n_heads;
    a.n_kv_heads = n_kv_heads;
    a.head_dim = hd;
    a.scale = c.attn_scale;
    a.softcap = c.attn_softcap;
    a.sinks = sinks;
    const bool sliding = c.is_sliding(layer);
    if (sliding) a.window = c.sliding_window;

    // Long key ranges are split into fixed runs of kKeysPerSplit keys that
    // threads work on in parallel, and the partial softmaxes are merged
    // afterwards (flash-decoding). The split points are absolute key
    // positions, whatever the batch holds, so a query gets bit-identical
    // attention whether it runs alone, batched, in a decode step or in a
    // prefill chunk (batch invariance). A run past a query's own position,
    // or before every query's sliding window, holds nothing it sees and
    // merges as an exact no-op; the runs before the window are not made.
    struct Split {
        size_t tile, first_work;
        int n;
    };
    std::vector<kernels::AttentionTile> work;
    std::vector<int64_t> partial_offset;  // per work item, into `partials`; -1: writes its rows directly
    std::vector<Split> split_tiles;
    int64_t partial_floats = 0;
    for (size_t i = 0; i < tiles.size(); ++i) {
        const int span = positions[tiles[i].t_end - 1] + 1;
        const int first_key = sliding ? std::max(0, positions[tiles[i].t_begin] - a.window + 1) : 0;
        const int first_split = first_key / kKeysPerSplit;
        const int n = (span + kKeysPerSplit - 1) / kKeysPerSplit - first_split;
        if (n == 1) {
            work.push_back(tiles[i]);
            partial_offset.push_back(-1);
            continue;
        }
        split_tiles.push_back({i, work.size(), n});
        for (int s = first_split; s < first_split + n; ++s) {
            kernels::AttentionTile part = tiles[i];
            part.key_begin = s * kKeysPerSplit;
            part.key_end = std::min(span, (s + 1) * kKeysPerSplit);
            work.push_back(part);
            partial_offset.push_back(partial_floats);
            partial_floats += kernels::attention_partial_floats(a, part);
        }
    }
    std::vector<float> partials(partial_floats);
    for (size_t w = 0; w < work.size(); ++w)
        if (partial_offset[w] >= 0) work[w].partial = partials.data() + partial_offset[w];

    // One chunk per tile: threads take the next tile as they finish one,
    // which balances tiles of different context lengths.
    pool.for_each_chunk(static_cast<int64_t>(work.size()), [&](int64_t i) { kernels::attention_tile(a, work[i]); });

    for (const Split& split : split_tiles) {
        std::vector<const float*> parts;
        for (int s = 0; s < split.n; ++s) parts.push_back(work[split.first_work + s].partial);
        kernels::merge_attention_partials(a, tiles[split.tile], parts.data(), split.n);
    }
}

void check_block_tables(const ModelConfig& c, const std::vector<SequenceSlice>& batch, const KVCache& cache) {
    // Only sliding groups hold null entries. A sliding layer reads from the
    // window of the slice's first query on (the attention kernel reads no
    // key outside a tile's windows); a group with a full-attention layer
    // (e.g. a single group for every layer) is never freed early.
    std::array<int, kMaxKvCacheGroups> window{};
    std::array<bool, kMaxKvCacheGroups> full{};
    for (int l = 0; l < c.n_layers; ++l) {
        const int g = cache.group_of(l);
        if (c.is_recurrent(l)) full[g] = true;  // one state slot per request, never freed early
        else if (c.is_sliding(l)) window[g] = c.sliding_window;
        else full[g] = true;
    }
    const int bs = cache.block_size();
    for (const SequenceSlice& sl : batch)
        for (int g = 0; g < kMaxKvCacheGroups; ++g) {
            if (sl.block_tables[g] == nullptr || full[g]) continue;
            const int first = std::max(0, sl.start_pos - window[g] + 1);
            for (int b = first / bs; b <= (sl.start_pos + sl.n_tokens - 1) / bs; ++b)
                if (sl.block_tables[g][b] == kNullBlock)
                    throw_runtime("internal error: attention would read a freed KV block (group " + std::to_string(g) +
                                  ", position " + std::to_string(b * bs) + ")");
        }
}

}  // namespace vllm
