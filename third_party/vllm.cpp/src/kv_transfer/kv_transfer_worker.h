// The connector's I/O threads, so that store reads and writes never block
// the engine loop: one thread loads (reads and checks the blocks a waiting
// request asks for), one saves (encodes and writes the blocks a step
// completed), each with its own store connection. The engine loop hands
// jobs over and collects finished loads without waiting; each thread calls
// `on_progress` (from its own thread) after a load and after the last
// queued save of a request, so an idle loop wakes up.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kv_transfer/kv_block_record.h"
#include "kv_transfer/kv_store.h"
#include "kv_transfer/kv_transfer_config.h"
#include "kv_transfer/kv_transfer_stats.h"
#include "kv_transfer/model_fingerprint.h"

namespace vllm::kv_transfer {

// One block of a request's prefix, by position and chain name.
struct BlockToLoad {
    int index = 0;
    BlockName name;
};

// The blocks a load found: consecutive from the job's first block, each a
// checked record with its K/V at records[i].data() + payload_offset.
struct LoadedBlocks {
    uint64_t ticket = 0;
    std::vector<BlockToLoad> blocks;
    std::vector<std::string> records;
    size_t payload_offset = 0;
};

struct BlockToSave {
    uint64_t ticket = 0;  // the request it belongs to (saves_pending)
    BlockName name;
    std::vector<unsigned char> payload;  // KvGeometry::payload_bytes()
};

class KvTransferWorker {
public:
    KvTransferWorker(const KvTransferConfig& config, const ModelFingerprint& fingerprint, const KvGeometry& geometry,
                     std::function<void()> on_progress);
    // Writes every save still queued, then stops the threads.
    ~KvTransferWorker();
    KvTransferWorker(const KvTransferWorker&) = delete;
    KvTransferWorker& operator=(const KvTransferWorker&) = delete;

    // Reads `blocks` in order up to the first one missing or refused.
    void submit_load(uint64_t ticket, std::vector<BlockToLoad> blocks);
    // Loads finished since the last call (never waits).
    std::vector<LoadedBlocks> take_loaded();
    // Queues a save; false (counted as dropped) when the queue is full.
    bool submit_save(BlockToSave block);
    // Returns once every queued save has been written or has failed.
    void wait_for_saves();
    // Whether saves of request `ticket` are queued or being written.
    bool saves_pending(uint64_t ticket) const;

    KvTransferStats stats() const;

private:
    void load_loop();
    void save_loop();
    void save_one(KvStore& store, const BlockToSave& block);
    void warn(const std::string& what);  // mutex_ held

    const KvTransferConfig config_;
    const ModelFingerprint fingerprint_;
    const KvGeometry geometry_;
    const std::function<void()> on_progress_;

    mutable std::mutex mutex_;
    std::condition_variable work_;
    std::condition_variable saves_done_;
    bool stopping_ = false;
    std::deque<std::pair<uint64_t, std::vector<BlockToLoad>>> load_queue_;
    std::vector<LoadedBlocks> loaded_;
    std::deque<BlockToSave> save_queue_;
    size_t queued_save_bytes_ = 0;
    bool saving_ = false;  // the save thread holds a block outside the queue
    std::unordered_map<uint64_t, int> saves_by_ticket_;  // queued or being written
    // Hashes this process stored (no need to ask the store again), and
    // hashes whose stored record was refused (overwrite, not skip).
    std::unordered_set<uint64_t> stored_;
    std::unordered_set<uint64_t> refused_;
    KvTransferStats stats_;
    std::thread load_thread_;
    std::thread save_thread_;
};

}  // namespace vllm::kv_transfer
