#include "core/kv_cache_group.h"

#include <algorithm>
#include <map>

#include "util/error.h"

namespace vllm {

std::vector<KVCacheGroupSpec> group_layers_by_window(const std::vector<int>& layer_windows,
                                                     const std::vector<bool>& recurrent, int64_t state_bytes) {
    std::map<int, std::vector<int>> by_window;  // ordered: 0 (full attention) first
    KVCacheGroupSpec states;
    states.recurrent = true;
    states.state_bytes = state_bytes;
    for (int layer = 0; layer < static_cast<int>(layer_windows.size()); ++layer) {
        if (layer_windows[layer] < 0) throw_invalid_argument("a layer's sliding window must not be negative");
        if (layer < static_cast<int>(recurrent.size()) && recurrent[layer])
            states.layers.push_back(layer);
        else
            by_window[layer_windows[layer]].push_back(layer);
    }
    const size_t n = by_window.size() + (states.layers.empty() ? 0 : 1);
    if (n > kMaxKvCacheGroups)
        throw_model_load("the model's layers need " + std::to_string(n) + " KV cache groups (attention windows and "
                         "recurrent state); at most " + std::to_string(kMaxKvCacheGroups) + " are supported");
    std::vector<KVCacheGroupSpec> groups;
    for (auto& [window, layers] : by_window) groups.push_back({window, std::move(layers)});
    if (!states.layers.empty()) groups.push_back(std::move(states));
    return groups;
}

KVCacheGroup::KVCacheGroup(KVCacheGroupSpec spec, int num_blocks, int block_size)
    : spec_(std::move(spec)), block_size_(block_size), pool_(num_blocks, block_size) {}

int KVCacheGroup::num_skipped_blocks(int num_computed) const {
    if (!spec_.is_sliding() || spec_.recurrent) return 0;
    // The next query sits at num_computed and sees keys from here on.
    const int first_visible = num_computed - spec_.sliding_window + 1;
    return first_visible > 0 ? first_visible / block_size_ : 0;
}

void KVCacheGroup::remove_skipped_blocks(std::vector<int32_t>& table, int num_computed) {
    const int skipped = std::min<int>(num_skipped_blocks(num_computed), static_cast<int>(table.size()));
    // In position order: the free queue evicts its oldest entry first, and
    // the block furthest back is the least likely to serve a later hit.
    std::vector<int32_t> released;
    for (int i = 0; i < skipped; ++i)
        if (table[i] != kNullBlock) {
            released.push_back(table[i]);
            table[i] = kNullBlock;
        }
    pool_.release(released);
}

int KVCacheGroup::find_longest_hit(const BlockHashChain& chain, int max_blocks, std::vector<int32_t>& blocks) const {
    blocks.clear();
    if (spec_.recurrent) return 0;  // no state per position to resume from
    auto cached = [&](int i) { return pool_.find_cached(chain.key(i)); };
    if (!spec_.is_sliding()) {
        for (int i = 0; i < max_blocks; ++i) {
            const int32_t b = cached(i);
            if (b < 0) break;
            blocks.push_back(b);
        }
        return static_cast<int>(blocks.size());
    }
    // A hit of L blocks needs the blocks holding positions
    // [L * block_size - window + 1, L * block_size): the last `needed` ones.
    const int needed = (spec_.sliding_window - 1 + block_size_ - 1) / block_size_;
    blocks.assign(max_blocks, kNullBlock);
    if (needed == 0) return max_blocks;  // a window of one token: the query reads only itself
    int run = 0;  // cached blocks in a row from i rightwards
    for (int i = max_blocks - 1; i >= 0; --i) {
        const int32_t b = cached(i);
        if (b < 0) {
            run = 0;
            continue;
        }
        blocks[i] = b;
        if (++run == needed) {
            blocks.resize(i + needed);
            std::fill(blocks.begin(), blocks.begin() + i, kNullBlock);
            return i + needed;
        }
    }
    // No run as long as the window: a run from block 0 still serves (the
    // window before its end reaches back to position 0).
    blocks.resize(run);
    return run;
}

int KVCacheGroup::blocks_per_sequence(int sliding_window, int max_chunk, int block_size) {
    return (sliding_window - 1 + max_chunk + block_size - 1) / block_size + 1;
}

}  // namespace vllm
