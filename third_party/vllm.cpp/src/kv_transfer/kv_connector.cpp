#include "kv_transfer/kv_connector.h"

#include <algorithm>
#include <cstring>

#include "core/block_hash_chain.h"

namespace vllm::kv_transfer {

namespace {

// Block i of `tokens` after a block hashed `parent_hash`, named as the
// prefix cache names it (the one place that speaks core's chain).
BlockName name_block(const std::vector<int32_t>& tokens, int block_size, int i, uint64_t parent_hash) {
    const int32_t* block = tokens.data() + int64_t(i) * block_size;
    return BlockName{block_hash(parent_hash, block, block_size), parent_hash,
                     std::vector<int32_t>(block, block + block_size)};
}

// The hash of every full block of the request's tokens (those it has cached
// extended to its current tokens).
std::vector<uint64_t> chain_hashes(const SchedulerRequest& request, int block_size) {
    std::vector<uint64_t> hashes = request.block_hashes;
    extend_block_hashes(hashes, request.tokens(), block_size);
    return hashes;
}

}  // namespace

KvConnector::KvConnector(const KvTransferConfig& config, const ModelFingerprint& fingerprint,
                         const KvGeometry& geometry, std::function<void()> wake)
    : config_(config),
      geometry_(geometry),
      worker_(config, fingerprint, geometry, [this, wake = std::move(wake)] {
          progress_ = true;
          wake();
      }) {}

bool KvConnector::ready_to_admit(const SchedulerRequest& request, int local_hit_tokens) {
    if (!config_.loads()) return true;
    const uint64_t id = request.arrival;
    const std::vector<int32_t>& tokens = request.tokens();
    auto it = loads_.find(id);
    if (it != loads_.end()) return it->second == LoadState::Done;
    // As the local prefix cache: at most all but the last token (it is
    // always computed, for its logits).
    const int block_size = geometry_.block_size;
    const int first = local_hit_tokens / block_size;
    const int end = (static_cast<int>(tokens.size()) - 1) / block_size;
    if (first >= end) {
        loads_[id] = LoadState::Done;
        return true;
    }
    const std::vector<uint64_t> hashes = chain_hashes(request, block_size);
    std::vector<BlockToLoad> blocks;
    for (int i = first; i < end; ++i)
        blocks.push_back(BlockToLoad{i, name_block(tokens, block_size, i, i == 0 ? 0 : hashes[i - 1])});
    loads_[id] = LoadState::Loading;
    ++loads_in_flight_;
    worker_.submit_load(id, std::move(blocks));
    return false;
}

void KvConnector::install_loaded(KVCache& cache, KVCacheManager& manager) {
    for (LoadedBlocks& loaded : worker_.take_loaded()) {
        for (size_t i = 0; i < loaded.blocks.size(); ++i) {
            const unsigned char* payload =
                reinterpret_cast<const unsigned char*>(loaded.records[i].data()) + loaded.payload_offset;
            const BlockName& name = loaded.blocks[i].name;
            manager.insert_cached_block(BlockKey{name.hash, name.parent_hash, name.tokens.data()}, [&](int group, int32_t block) {
                const unsigned char* k = payload;
                for (int layer = 0; layer < cache.num_layers(); ++layer) {
                    const size_t key_bytes = cache.key_block_bytes(layer), value_bytes = cache.value_block_bytes(layer);
                    if (cache.group_of(layer) == group) {
                        std::memcpy(cache.key_block(layer, block), k, key_bytes);
                        std::memcpy(cache.value_block(layer, block), k + key_bytes, value_bytes);
                    }
                    k += key_bytes + value_bytes;
                }
            });
        }
        auto it = loads_.find(loaded.ticket);
        if (it != loads_.end() && it->second == LoadState::Loading) {
            it->second = LoadState::Done;
            --loads_in_flight_;
        }
    }
}

void KvConnector::save_completed_blocks(const SchedulerRequest& request, int after,
                                        const std::vector<const std::vector<int32_t>*>& tables,
                                        const KVCache& cache) {
    if (!config_.saves()) return;
    const uint64_t id = request.arrival;
    const std::vector<int32_t>& tokens = request.tokens();
    const int before = request.num_computed_tokens;
    const int block_size = geometry_.block_size;
    // Only accepted tokens: a step that verified draft tokens (speculative
    // decoding) computed past them, and rejected drafts are not the prefix.
    const int full = std::min(after, request.num_tokens()) / block_size;
    auto found = saves_.find(id);
    if (found == saves_.end()) {
        // The first step: blocks before it came from the prefix cache (local
        // or loaded) and are not this request's to save.
        SaveProgress start;
        start.saved_blocks = before / block_size;
        if (start.saved_blocks > 0) {
            start.parent_hash = chain_hashes(request, block_size)[start.saved_blocks - 1];
        }
        found = saves_.emplace(id, start).first;
    }
    SaveProgress& progress = found->second;
    for (int i = progress.saved_blocks; i < full; ++i) {
        BlockToSave block;
        block.ticket = id;
        block.name = name_block(tokens, block_size, i, progress.parent_hash);
        progress.parent_hash = block.name.hash;
        progress.saved_blocks = i + 1;
        block.payload.resize(geometry_.payload_bytes());
        bool complete = true;
        unsigned char* k = block.payload.data();
        for (int layer = 0; layer < cache.num_layers() && complete; ++layer) {
            const std::vector<int32_t>& table = *tables[cache.group_of(layer)];
            // A sliding group may already have given the block back.
            if (i >= static_cast<int>(table.size()) || table[i] == kNullBlock) {
                complete = false;
                break;
            }
            const size_t key_bytes = cache.key_block_bytes(layer), value_bytes = cache.value_block_bytes(layer);
            std::memcpy(k, cache.key_block(layer, table[i]), key_bytes);
            std::memcpy(k + key_bytes, cache.value_block(layer, table[i]), value_bytes);
            k += key_bytes + value_bytes;
        }
        if (complete) worker_.submit_save(std::move(block));
    }
}

void KvConnector::forget(uint64_t id) {
    auto it = loads_.find(id);
    if (it != loads_.end()) {
        if (it->second == LoadState::Loading) --loads_in_flight_;
        loads_.erase(it);
    }
    saves_.erase(id);
}

}  // namespace vllm::kv_transfer
