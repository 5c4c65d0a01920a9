#include "kv_transfer/redis_kv_store.h"

namespace vllm::kv_transfer {

namespace {
constexpr auto kReconnectBackoff = std::chrono::seconds(1);
}

RedisKvStore::RedisKvStore(RedisAddress address, int timeout_ms)
    : address_(std::move(address)), client_(address_.host, address_.port, timeout_ms) {}

std::string RedisKvStore::redis_key(const StoreKey& key) { return "vllm-cpp:kv:" + key.model + ":" + key.block_hex(); }

bool RedisKvStore::run(const std::vector<std::string_view>& args, RespReply& reply, std::string& why,
                       size_t max_bulk) {
    if (!client_.command(args, reply, why, max_bulk)) {
        last_failure_ = why;
        retry_after_ = std::chrono::steady_clock::now() + kReconnectBackoff;
        return false;
    }
    if (reply.type == RespReply::Type::Error) {
        why = "Redis refused " + std::string(args[0]) + ": " + reply.text;
        return false;
    }
    return true;
}

bool RedisKvStore::ready(std::string& why) {
    if (client_.connected()) return true;
    if (std::chrono::steady_clock::now() < retry_after_) {
        why = last_failure_ + " (retrying within a second)";
        return false;
    }
    RespReply reply;
    if (!address_.password.empty() && !run({"AUTH", address_.password}, reply, why, 1024)) {
        client_.close();
        return false;
    }
    const std::string db = std::to_string(address_.db);
    if (address_.db != 0 && !run({"SELECT", db}, reply, why, 1024)) {
        client_.close();
        return false;
    }
    if (address_.password.empty() && address_.db == 0 && !run({"PING"}, reply, why, 1024)) {
        client_.close();
        return false;
    }
    return true;
}

StoreResult RedisKvStore::get(const StoreKey& key, size_t max_bytes, std::string& record, std::string& why) {
    if (!ready(why)) return StoreResult::Unavailable;
    RespReply reply;
    const std::string name = redis_key(key);
    if (!run({"GET", name}, reply, why, max_bytes)) return StoreResult::Unavailable;
    if (reply.type == RespReply::Type::Null) return StoreResult::Miss;
    if (reply.type != RespReply::Type::BulkString) {
        why = "Redis answered GET with something other than a string";
        return StoreResult::Unavailable;
    }
    record = std::move(reply.text);
    return StoreResult::Hit;
}

StoreResult RedisKvStore::exists(const StoreKey& key, std::string& why) {
    if (!ready(why)) return StoreResult::Unavailable;
    RespReply reply;
    const std::string name = redis_key(key);
    if (!run({"EXISTS", name}, reply, why, 1024)) return StoreResult::Unavailable;
    if (reply.type != RespReply::Type::Integer) {
        why = "Redis answered EXISTS with something other than an integer";
        return StoreResult::Unavailable;
    }
    return reply.integer > 0 ? StoreResult::Hit : StoreResult::Miss;
}

bool RedisKvStore::put(const StoreKey& key, const std::string& record, std::string& why) {
    if (!ready(why)) return false;
    RespReply reply;
    const std::string name = redis_key(key);
    // A full server (maxmemory with noeviction) answers with an error.
    return run({"SET", name, record}, reply, why, 1024);
}

}  // namespace vllm::kv_transfer
