// What the scheduler asks before admitting a waiting request when a KV
// connector shares blocks between engines (kv_transfer/kv_connector.h, vLLM
// V1's get_num_new_matched_tokens made asynchronous): whether blocks of its
// prefix beyond the local prefix cache are still being fetched. Such a
// request steps aside (others are admitted) until the fetched blocks sit in
// the prefix cache, where admission adopts them as an ordinary hit.
#pragma once

#include "core/scheduler_request.h"

namespace vllm {

class KvLoadGate {
public:
    virtual ~KvLoadGate() = default;
    // `local_hit_tokens`: what the local prefix cache holds of its start.
    virtual bool ready_to_admit(const SchedulerRequest& request, int local_hit_tokens) = 0;
};

}  // namespace vllm
