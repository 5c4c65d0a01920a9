// Block records in Redis (RedisConnector), the store a deployment of several
// machines already shares: key "vllm-cpp:kv:<model fingerprint>:<block
// hash>", value the record. SET is atomic, so readers never see half a
// record. An unreachable or failing server makes calls Unavailable; after a
// failure the store waits a second before trying to connect again, so a
// server that is down costs each block no more than one quick refusal.
#pragma once
#include <chrono>
#include <string>

#include "kv_transfer/kv_store.h"
#include "kv_transfer/kv_transfer_config.h"
#include "kv_transfer/resp_client.h"

namespace vllm::kv_transfer {

class RedisKvStore : public KvStore {
public:
    RedisKvStore(RedisAddress address, int timeout_ms);

    StoreResult get(const StoreKey& key, size_t max_bytes, std::string& record, std::string& why) override;
    StoreResult exists(const StoreKey& key, std::string& why) override;
    bool put(const StoreKey& key, const std::string& record, std::string& why) override;

    static std::string redis_key(const StoreKey& key);

private:
    // Connects and authenticates when needed; false (with why) while the
    // server is unreachable or in the back-off after a failure.
    bool ready(std::string& why);
    // One command; a failure starts the back-off.
    bool run(const std::vector<std::string_view>& args, RespReply& reply, std::string& why, size_t max_bulk);

    RedisAddress address_;
    RespClient client_;
    std::chrono::steady_clock::time_point retry_after_{};
    std::string last_failure_;
};

}  // namespace vllm::kv_transfer
