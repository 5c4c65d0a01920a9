// Where stored KV blocks live: a directory (directory_kv_store.h) or a
// Redis server (redis_kv_store.h). Records are opaque bytes here
// (kv_block_record.h checks them). A store is used by one thread; every
// I/O thread opens its own. No call throws: a store that cannot answer
// says so (Unavailable, with why), and the connector recomputes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace vllm::kv_transfer {

struct KvTransferConfig;

// A record's name: the model fingerprint's namespace and the block's chain hash.
struct StoreKey {
    std::string model;  // ModelFingerprint::hex()
    uint64_t block_hash = 0;

    std::string block_hex() const;  // 16 lower-case hex digits
};

enum class StoreResult { Hit, Miss, Unavailable };

class KvStore {
public:
    virtual ~KvStore() = default;

    // The record under `key`, at most `max_bytes` of it (a longer one is
    // cut there, which its check then refuses).
    virtual StoreResult get(const StoreKey& key, size_t max_bytes, std::string& record, std::string& why) = 0;
    // Hit when a record is stored under `key`.
    virtual StoreResult exists(const StoreKey& key, std::string& why) = 0;
    // Stores `record` atomically: a reader sees all of it or nothing, even
    // when this process dies mid-write or another writes the same key.
    // False, with why, when it could not be stored.
    virtual bool put(const StoreKey& key, const std::string& record, std::string& why) = 0;
};

// The store the config names (nothing is opened or connected yet).
std::unique_ptr<KvStore> open_kv_store(const KvTransferConfig& config);

}  // namespace vllm::kv_transfer
