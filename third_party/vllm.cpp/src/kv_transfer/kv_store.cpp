#include "kv_transfer/kv_store.h"

#include <cstdio>

#include "kv_transfer/directory_kv_store.h"
#include "kv_transfer/kv_transfer_config.h"
#include "kv_transfer/redis_kv_store.h"

namespace vllm::kv_transfer {

std::string StoreKey::block_hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(block_hash));
    return buf;
}

std::unique_ptr<KvStore> open_kv_store(const KvTransferConfig& config) {
    if (config.connector == ConnectorKind::Redis) return std::make_unique<RedisKvStore>(config.redis, config.timeout_ms);
    return std::make_unique<DirectoryKvStore>(config.shared_storage_path);
}

}  // namespace vllm::kv_transfer
