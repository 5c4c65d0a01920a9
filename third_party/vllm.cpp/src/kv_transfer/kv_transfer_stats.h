// KV transfer counters, as engine stats show them under "kv_transfer".
#pragma once
#include <cstdint>
#include <string>

namespace vllm::kv_transfer {

struct KvTransferStats {
    std::string connector;  // kv_connector as given
    std::string role;       // kv_role
    int64_t blocks_loaded = 0;
    int64_t tokens_loaded = 0;
    int64_t bytes_loaded = 0;
    double load_seconds = 0;    // I/O thread time reading and checking blocks
    int64_t blocks_saved = 0;
    int64_t tokens_saved = 0;
    int64_t bytes_saved = 0;
    double save_seconds = 0;    // I/O thread time encoding and writing blocks
    int64_t blocks_already_stored = 0;  // saves skipped: the store had the block
    int64_t load_misses = 0;    // lookups that stopped at a block the store lacks
    int64_t blocks_rejected = 0;  // corrupt, truncated or foreign blocks, recomputed
    int64_t warnings = 0;       // store failures (unreachable, unwritable, full), recomputed or not saved
    int64_t saves_dropped = 0;  // saves refused because too many bytes were already queued
    int64_t saves_pending = 0;  // blocks waiting to be written
    int64_t loads_pending = 0;  // requests whose blocks are being read
    std::string last_warning;   // the latest failure or rejection, "" when none

    std::string to_json() const;
};

}  // namespace vllm::kv_transfer
