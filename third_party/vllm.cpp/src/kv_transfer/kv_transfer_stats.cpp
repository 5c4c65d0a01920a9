#include "kv_transfer/kv_transfer_stats.h"

#include "util/json.h"

namespace vllm::kv_transfer {

std::string KvTransferStats::to_json() const {
    json::Value v = json::Value::object();
    v.set("connector", connector);
    v.set("role", role);
    v.set("blocks_loaded", blocks_loaded);
    v.set("tokens_loaded", tokens_loaded);
    v.set("bytes_loaded", bytes_loaded);
    v.set("load_seconds", load_seconds);
    v.set("blocks_saved", blocks_saved);
    v.set("tokens_saved", tokens_saved);
    v.set("bytes_saved", bytes_saved);
    v.set("save_seconds", save_seconds);
    v.set("blocks_already_stored", blocks_already_stored);
    v.set("load_misses", load_misses);
    v.set("blocks_rejected", blocks_rejected);
    v.set("warnings", warnings);
    v.set("saves_dropped", saves_dropped);
    v.set("saves_pending", saves_pending);
    v.set("loads_pending", loads_pending);
    v.set("last_warning", last_warning);
    return json::dump(v);
}

}  // namespace vllm::kv_transfer
