// The engine: model, tokenizer, KV cache and thread pool, and generation.
// This slice runs one request at a time (generate() serialises on a mutex);
// the continuous-batching engine loop replaces that lock in the serving-core
// issue without changing this interface's callers.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/block_pool.h"
#include "core/kv_cache.h"
#include "engine/engine_config.h"
#include "model/gguf_reader.h"
#include "model/llama.h"
#include "sample/sampling_config.h"
#include "tokenizer/tokenizer.h"
#include "util/thread_pool.h"

namespace vllm {

struct GenerationResult {
    std::string text;
    const char* finish_reason = nullptr;
    int32_t prompt_tokens = 0;
    int32_t completion_tokens = 0;
};

// Receives each text delta (finished == false, non-empty), then one
// terminal call (finished == true, ""). Returning false aborts: no further
// calls, not even the terminal one.
using DeltaCallback = std::function<bool(const std::string& delta, bool finished)>;

class Engine {
public:
    // Throws Error: MODEL_LOAD for unreadable/corrupt/unsupported model
    // files, INVALID_ARGUMENT for options that do not fit the model.
    explicit Engine(const EngineConfig& config);

    // Blocking generation. `on_delta` may be empty.
    GenerationResult generate(const std::string& prompt, const SamplingConfig& sampling,
                              const DeltaCallback& on_delta);

    const Tokenizer& tokenizer() const { return *tokenizer_; }
    int max_model_len() const { return max_model_len_; }

private:
    std::vector<int32_t> tokenize_prompt(const std::string& prompt) const;

    EngineConfig config_;
    std::unique_ptr<GgufFile> file_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<LlamaModel> model_;
    std::unique_ptr<KVCache> kv_cache_;
    std::unique_ptr<BlockPool> block_pool_;
    ThreadPool pool_;
    int max_model_len_ = 0;
    std::mutex generate_mutex_;
    // The thread inside generate(), so a callback that re-enters the engine
    // gets an error instead of a self-deadlock.
    std::atomic<std::thread::id> generating_thread_{};
};

}  // namespace vllm
