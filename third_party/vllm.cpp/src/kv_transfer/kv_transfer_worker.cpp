#include "kv_transfer/kv_transfer_worker.h"

#include <chrono>


namespace vllm::kv_transfer {

namespace {

// Saves wait in memory; past this many bytes new ones are dropped (a store
// slower than the engine must not grow the process without bound).
constexpr size_t kMaxQueuedSaveBytes = size_t(512) << 20;
constexpr size_t kMaxRememberedHashes = size_t(1) << 20;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

KvTransferWorker::KvTransferWorker(const KvTransferConfig& config, const ModelFingerprint& fingerprint,
                                   const KvGeometry& geometry, std::function<void()> on_progress)
    : config_(config), fingerprint_(fingerprint), geometry_(geometry), on_progress_(std::move(on_progress)) {
    stats_.connector = config.connector_name;
    stats_.role = role_name(config.role);
    if (config.loads()) load_thread_ = std::thread([this] { load_loop(); });
    if (config.saves()) save_thread_ = std::thread([this] { save_loop(); });
}

KvTransferWorker::~KvTransferWorker() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    work_.notify_all();
    if (load_thread_.joinable()) load_thread_.join();
    if (save_thread_.joinable()) save_thread_.join();  // it empties its queue first
}

void KvTransferWorker::warn(const std::string& what) {
    ++stats_.warnings;
    stats_.last_warning = what;
}

void KvTransferWorker::submit_load(uint64_t ticket, std::vector<BlockToLoad> blocks) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        load_queue_.emplace_back(ticket, std::move(blocks));
        ++stats_.loads_pending;
    }
    work_.notify_all();
}

std::vector<LoadedBlocks> KvTransferWorker::take_loaded() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<LoadedBlocks> out;
    out.swap(loaded_);
    return out;
}

bool KvTransferWorker::submit_save(BlockToSave block) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (queued_save_bytes_ + block.payload.size() > kMaxQueuedSaveBytes) {
            ++stats_.saves_dropped;
            return false;
        }
        queued_save_bytes_ += block.payload.size();
        ++saves_by_ticket_[block.ticket];
        save_queue_.push_back(std::move(block));
        ++stats_.saves_pending;
    }
    work_.notify_all();
    return true;
}

void KvTransferWorker::wait_for_saves() {
    std::unique_lock<std::mutex> lock(mutex_);
    saves_done_.wait(lock, [&] { return save_queue_.empty() && !saving_; });
}

bool KvTransferWorker::saves_pending(uint64_t ticket) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return saves_by_ticket_.count(ticket) > 0;
}

KvTransferStats KvTransferWorker::stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
}

void KvTransferWorker::load_loop() {
    std::unique_ptr<KvStore> store = open_kv_store(config_);
    const size_t max_bytes = geometry_.payload_bytes() + (size_t(1) << 20);  // the record and then some
    for (;;) {
        std::pair<uint64_t, std::vector<BlockToLoad>> job;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            work_.wait(lock, [&] { return stopping_ || !load_queue_.empty(); });
            if (stopping_) return;
            job = std::move(load_queue_.front());
            load_queue_.pop_front();
        }
        const auto start = std::chrono::steady_clock::now();
        LoadedBlocks result;
        result.ticket = job.first;
        std::string why;
        std::string failure;  // a warning or rejection to record
        bool rejected = false, missed = false;
        for (BlockToLoad& block : job.second) {
            std::string record;
            const StoreKey key{fingerprint_.hex(), block.name.hash};
            const StoreResult got = store->get(key, max_bytes, record, why);
            if (got == StoreResult::Miss) {
                missed = true;
                break;
            }
            if (got == StoreResult::Unavailable) {
                failure = "load: " + why;
                break;
            }
            const unsigned char* payload = nullptr;
            const RecordCheck check = check_block_record(record, fingerprint_, geometry_, block.name, &payload);
            if (check != RecordCheck::Ok) {
                rejected = true;
                failure = "load: refused the " + std::string(record_check_name(check)) + " block " + key.block_hex() +
                          " (recomputed)";
                break;
            }
            result.payload_offset = static_cast<size_t>(payload - reinterpret_cast<const unsigned char*>(record.data()));
            result.blocks.push_back(std::move(block));
            result.records.push_back(std::move(record));
        }
        const double elapsed = seconds_since(start);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            const int64_t n = static_cast<int64_t>(result.blocks.size());
            stats_.blocks_loaded += n;
            stats_.tokens_loaded += n * geometry_.block_size;
            stats_.bytes_loaded += n * static_cast<int64_t>(geometry_.payload_bytes());
            stats_.load_seconds += elapsed;
            if (missed) ++stats_.load_misses;
            if (rejected) {
                ++stats_.blocks_rejected;
                stats_.last_warning = failure;
                refused_.insert(job.second[result.blocks.size()].name.hash);
            } else if (!failure.empty()) {
                warn(failure);
            }
            --stats_.loads_pending;
            loaded_.push_back(std::move(result));
        }
        on_progress_();
    }
}

void KvTransferWorker::save_loop() {
    std::unique_ptr<KvStore> store = open_kv_store(config_);
    for (;;) {
        BlockToSave block;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            work_.wait(lock, [&] { return stopping_ || !save_queue_.empty(); });
            if (save_queue_.empty()) return;  // stopping, and everything is written
            block = std::move(save_queue_.front());
            save_queue_.pop_front();
            saving_ = true;
        }
        save_one(*store, block);
        bool request_done = false;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            queued_save_bytes_ -= block.payload.size();
            --stats_.saves_pending;
            saving_ = false;
            auto it = saves_by_ticket_.find(block.ticket);
            if (--it->second == 0) {
                saves_by_ticket_.erase(it);
                request_done = true;
            }
        }
        saves_done_.notify_all();
        if (request_done) on_progress_();
    }
}

void KvTransferWorker::save_one(KvStore& store, const BlockToSave& block) {
    const auto start = std::chrono::steady_clock::now();
    const StoreKey key{fingerprint_.hex(), block.name.hash};
    bool overwrite = false;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stored_.count(block.name.hash)) {
            ++stats_.blocks_already_stored;
            return;
        }
        overwrite = refused_.erase(block.name.hash) > 0;  // a refused record is replaced, not kept
    }
    std::string why;
    const StoreResult present = overwrite ? StoreResult::Miss : store.exists(key, why);
    bool stored = present == StoreResult::Hit;
    bool written = false;
    if (!stored) {
        const std::string record = encode_block_record(fingerprint_, geometry_, block.name, block.payload.data());
        written = stored = store.put(key, record, why);
    }
    const double elapsed = seconds_since(start);
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.save_seconds += elapsed;
    if (!stored) {
        warn("save: " + why);
        return;
    }
    if (stored_.size() >= kMaxRememberedHashes) stored_.clear();  // only an optimisation: forgetting costs an EXISTS
    stored_.insert(block.name.hash);
    if (!written) {
        ++stats_.blocks_already_stored;
        return;
    }
    ++stats_.blocks_saved;
    stats_.tokens_saved += geometry_.block_size;
    stats_.bytes_saved += static_cast<int64_t>(geometry_.payload_bytes());
}

}  // namespace vllm::kv_transfer
