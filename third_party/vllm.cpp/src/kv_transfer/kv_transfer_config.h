// kv_transfer_config (vllm_model_params, vLLM's --kv-transfer-config): which
// connector shares computed KV blocks with other engines, and in which
// role. Parsed and checked at load; anything unknown or missing is
// INVALID_ARGUMENT naming it, never ignored.
//
//   {"kv_connector": "SharedStorageConnector" | "ExampleConnector" | "RedisConnector",
//    "kv_role": "kv_producer" | "kv_consumer" | "kv_both",
//    "kv_connector_extra_config": {"shared_storage_path": DIR}      (the two storage names)
//                               | {"url": "redis://[:PASSWORD@]HOST[:PORT][/DB]"}  (Redis)
//                                  + optional "timeout_ms" (Redis: per operation, default 1000)}
#pragma once
#include <cstdint>
#include <string>

namespace vllm::kv_transfer {

enum class ConnectorKind { SharedStorage, Redis };
enum class KvRole { Producer, Consumer, Both };

struct RedisAddress {
    std::string host;
    int port = 6379;
    int db = 0;
    std::string password;  // "" : no AUTH
};

struct KvTransferConfig {
    ConnectorKind connector = ConnectorKind::SharedStorage;
    std::string connector_name;  // as given (stats, messages)
    KvRole role = KvRole::Both;
    std::string shared_storage_path;  // SharedStorage
    RedisAddress redis;               // Redis
    int timeout_ms = 1000;            // Redis: connect, send and receive, each

    bool saves() const { return role != KvRole::Consumer; }
    bool loads() const { return role != KvRole::Producer; }

    // The JSON text of kv_transfer_config; INVALID_ARGUMENT for anything
    // malformed, unknown or missing.
    static KvTransferConfig parse(const std::string& json_text);
};

// "redis://[:PASSWORD@]HOST[:PORT][/DB]"; INVALID_ARGUMENT otherwise
// (rediss:// and unix sockets are refused by name: not supported).
RedisAddress parse_redis_url(const std::string& url);

const char* role_name(KvRole role);

}  // namespace vllm::kv_transfer
