// The KV connector in the engine loop, in vLLM V1's shape (KVConnectorBase_V1)
// with its I/O made asynchronous end to end:
//
// - Scheduler side (vLLM's get_num_new_matched_tokens): before a waiting
//   request is admitted, ready_to_admit asks whether the store holds the
//   blocks of its prompt beyond the local prefix cache. The first time it
//   starts a load on the I/O thread and answers "not yet"; the scheduler
//   admits others meanwhile.
// - Worker side, start of a step (vLLM's start_load_kv): install_loaded
//   writes each finished load's blocks into free KV blocks and records them
//   in the prefix cache, so the request's admission finds them as an
//   ordinary prefix-cache hit (one code path for local and remote hits,
//   sliding-window groups included: each group takes what its own hit rule
//   needs). Rather than vLLM's allocate-then-load-in-place, blocks are read
//   into memory off the loop and copied in on it: nothing is reserved while
//   the store is slow, and a block that never arrives costs nothing.
// - Worker side, after a step's forward (vLLM's save_kv_layer and
//   wait_for_save): save_completed_blocks copies the blocks that became full
//   out of the cache (cheap: one memcpy per layer) and queues them for the
//   save thread, which checks, encodes and writes them.
// A store that fails degrades to recomputing (loads) or to not sharing
// (saves), counted in the stats; requests never fail because of it.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/kv_load_gate.h"
#include "kv_cache/kv_cache.h"
#include "kv_transfer/kv_transfer_config.h"
#include "kv_transfer/kv_transfer_worker.h"
#include "kv_transfer/model_fingerprint.h"

namespace vllm::kv_transfer {

class KvConnector : public KvLoadGate {
public:
    // `wake` is called from an I/O thread when a load finishes or a
    // request's last save is written (the engine loop may be idle, waiting).
    KvConnector(const KvTransferConfig& config, const ModelFingerprint& fingerprint, const KvGeometry& geometry,
                std::function<void()> wake);

    const KvTransferConfig& config() const { return config_; }

    // Whether the waiting request may be admitted now (kv_load_gate.h).
    // Without loading, always.
    bool ready_to_admit(const SchedulerRequest& request, int local_hit_tokens) override;
    // Puts the blocks of finished loads into the prefix cache.
    void install_loaded(KVCache& cache, KVCacheManager& manager);
    // After a forward pass computed the request's tokens up to `after`
    // (num_computed_tokens not yet advanced): queues saves of the blocks
    // that became full, read through its block table of each group.
    void save_completed_blocks(const SchedulerRequest& request, int after,
                               const std::vector<const std::vector<int32_t>*>& tables, const KVCache& cache);
    // The request finished or was aborted.
    void forget(uint64_t id);

    // Requests whose blocks are being read.
    int loads_in_flight() const { return loads_in_flight_; }
    // True (once) after I/O progress (a load finished, a request's saves
    // were written) since the last call.
    bool take_wakeup() { return progress_.exchange(false); }
    // Whether the request's blocks are still being written. A kv_producer
    // holds back a finished request's end until they are, so whoever it
    // answers (a disaggregated decode engine) finds them stored.
    bool holds_finish(uint64_t id) const { return config_.role == KvRole::Producer && worker_.saves_pending(id); }

    KvTransferStats stats() const { return worker_.stats(); }
    // Blocks until queued saves are written (shutdown: a producer's blocks outlive it).
    void wait_for_saves() { worker_.wait_for_saves(); }

private:
    struct SaveProgress {
        int saved_blocks = 0;  // blocks [0, saved_blocks) are handled
        uint64_t parent_hash = 0;
    };
    enum class LoadState { Loading, Done };

    KvTransferConfig config_;
    KvGeometry geometry_;
    std::atomic<bool> progress_{false};
    std::unordered_map<uint64_t, LoadState> loads_;
    std::unordered_map<uint64_t, SaveProgress> saves_;
    int loads_in_flight_ = 0;
    KvTransferWorker worker_;  // last: its threads stop before the rest goes
};

}  // namespace vllm::kv_transfer
