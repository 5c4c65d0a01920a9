// One engine step, vLLM V1's EngineCore: schedule -> run the model on the
// mixed prefill/decode batch -> sample each sequence that reached its last
// token -> hand text to the requests' streams. Runs on the engine loop
// thread only; it never calls user code.
#pragma once
#include <map>
#include <memory>
#include <vector>

#include "core/kv_cache.h"
#include "core/kv_cache_manager.h"
#include "core/scheduler.h"
#include "engine/engine_config.h"
#include "engine/kv_cache_plan.h"
#include "engine/request.h"
#include "engine/stats.h"
#include "model/llama.h"
#include "sample/sampler.h"
#include "tokenizer/tokenizer.h"
#include "util/thread_pool.h"

namespace vllm {

class EngineCore {
public:
    EngineCore(const EngineConfig& config, LlamaModel& model, const Tokenizer& tokenizer, const KvCachePlan& kv_plan,
               int max_model_len);

    void add(std::unique_ptr<Request> request);
    bool has_work() const { return !requests_.empty(); }
    // Drops requests whose consumer cancelled them.
    void drop_cancelled();
    // One step; a no-op without work.
    void step();
    // Ends every live request with `error` (the engine is shutting down or
    // a step failed).
    void fail_all(vllm_status status, const std::string& error);

    EngineStats stats() const;
    // Sends the terminal events of the requests the last step finished. The
    // loop calls it after publishing stats, so a caller woken by its
    // request's end sees that request in the stats.
    void deliver_finished();

private:
    // Samples the next token of `r` from its logits row and delivers the text.
    void sample_and_output(Request& r, float* logits);
    // Appends one generated token: output, detokenized text (into `delta`),
    // finish checks. Returns the finish reason, or nullptr.
    const char* append_token(Request& r, int32_t token, std::string& delta);
    void finish(Request& r);

    const EngineConfig& config_;
    LlamaModel& model_;
    const Tokenizer& tokenizer_;
    int max_model_len_;
    KVCache kv_cache_;
    KVCacheManager kv_manager_;
    Scheduler scheduler_;
    ThreadPool pool_;
    Request& request_of(const SchedulerRequest& sched) { return *requests_.at(sched.arrival); }

    std::map<uint64_t, std::unique_ptr<Request>> requests_;  // by arrival (the scheduler request's id)
    std::vector<std::pair<std::shared_ptr<RequestStream>, const char*>> finished_;  // stream, finish reason
    Sampler sampler_;  // its scratch is reused request after request
    std::vector<float> logits_;
    std::vector<float> raw_logits_;  // a copy of one row, for log-probabilities
    EngineStats counters_;  // the cumulative fields; the rest are read live in stats()
};

}  // namespace vllm
