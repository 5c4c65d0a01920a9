#include "engine/engine.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

#include "engine/output_processor.h"
#include "sample/sampler.h"
#include "util/error.h"
#include "util/utf8.h"

namespace vllm {

namespace {

// A directory is a Hugging Face model when it has config.json; anything else
// in a directory is not a model we can find.
[[noreturn]] void refuse_directory(const std::string& path) {
    struct stat st {};
    std::string config = path + "/config.json";
    if (::stat(config.c_str(), &st) == 0)
        throw_invalid_argument("cannot load '" + path +
                               "': Hugging Face safetensors model directories are not implemented yet in this engine "
                               "(load a GGUF file)");
    throw_model_load("cannot load '" + path + "': the directory holds no model files (expected a GGUF file, "
                     "or config.json with *.safetensors and tokenizer.json)");
}

int64_t kv_budget_bytes() {
    int64_t mb = EngineConfig::kDefaultKvCacheMb;
    if (const char* env = std::getenv("VLLM_CPP_KV_CACHE_MB")) {
        int64_t v = std::atoll(env);
        if (v > 0) mb = v;
    }
    return mb << 20;
}

}  // namespace

Engine::Engine(const EngineConfig& config) : config_(config) {
    struct stat st {};
    if (::stat(config.model_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) refuse_directory(config.model_path);
    file_ = std::make_unique<GgufFile>(config.model_path);
    ModelConfig model_config = ModelConfig::from_gguf(*file_);
    ModelWeights weights = ModelWeights::from_gguf(*file_, model_config);
    tokenizer_ = Tokenizer::create(TokenizerData::from_gguf(*file_));
    if (tokenizer_->vocab_size() != model_config.vocab_size)
        throw_model_load("cannot load '" + config.model_path + "': the tokenizer has " +
                         std::to_string(tokenizer_->vocab_size()) + " tokens but the embedding has " +
                         std::to_string(model_config.vocab_size) + " rows");

    max_model_len_ = config.max_model_len > 0 ? config.max_model_len : model_config.context_length;
    if (max_model_len_ > model_config.context_length)
        throw_invalid_argument("max_model_len " + std::to_string(max_model_len_) + " exceeds the model's context length " +
                               std::to_string(model_config.context_length));

    const int bs = config.block_size;
    const int blocks_for_one_seq = (max_model_len_ + bs - 1) / bs;
    int num_blocks = config.num_blocks;
    if (num_blocks <= 0) {
        const size_t per_block = KVCache::bytes_per_token(model_config.n_layers, model_config.n_kv_heads,
                                                          model_config.head_dim) * bs;
        const int64_t budget_blocks = kv_budget_bytes() / static_cast<int64_t>(per_block);
        // Enough for max_num_seqs full-length sequences, within the budget,
        // but never less than one full-length sequence.
        num_blocks = static_cast<int>(std::max<int64_t>(blocks_for_one_seq,
                                                        std::min<int64_t>(budget_blocks, int64_t(blocks_for_one_seq) * config.max_num_seqs)));
    } else if (num_blocks < blocks_for_one_seq) {
        throw_invalid_argument("num_blocks " + std::to_string(num_blocks) + " x block_size " + std::to_string(bs) +
                               " holds fewer tokens than max_model_len " + std::to_string(max_model_len_) +
                               "; raise num_blocks or lower max_model_len");
    }
    kv_cache_ = std::make_unique<KVCache>(model_config.n_layers, model_config.n_kv_heads, model_config.head_dim, bs, num_blocks);
    block_pool_ = std::make_unique<BlockPool>(num_blocks);
    model_ = std::make_unique<LlamaModel>(std::move(model_config), std::move(weights));
}

std::vector<int32_t> Engine::tokenize_prompt(const std::string& prompt) const {
    if (!utf8::is_valid(prompt)) throw_invalid_argument("prompt is not valid UTF-8");
    std::vector<int32_t> ids = tokenizer_->encode(prompt, /*add_special=*/true, /*parse_special=*/true);
    if (ids.empty()) throw_invalid_argument("prompt is empty (it encodes to no tokens)");
    if (static_cast<int>(ids.size()) > max_model_len_)
        throw_invalid_argument("prompt has " + std::to_string(ids.size()) + " tokens, more than max_model_len " +
                               std::to_string(max_model_len_));
    return ids;
}

GenerationResult Engine::generate(const std::string& prompt, const SamplingConfig& sampling,
                                  const DeltaCallback& on_delta) {
    std::vector<int32_t> prompt_ids = tokenize_prompt(prompt);
    if (generating_thread_.load() == std::this_thread::get_id())
        throw_invalid_argument("the engine cannot be called from its own stream callback");
    std::lock_guard<std::mutex> lock(generate_mutex_);
    generating_thread_.store(std::this_thread::get_id());
    struct ThreadMark {
        std::atomic<std::thread::id>& mark;
        ~ThreadMark() { mark.store(std::thread::id()); }
    } thread_mark{generating_thread_};

    GenerationResult result;
    result.prompt_tokens = static_cast<int32_t>(prompt_ids.size());
    std::mt19937_64 rng(sampling.has_seed ? sampling.seed : std::random_device{}());
    OutputProcessor output(*tokenizer_, sampling);
    std::vector<int32_t> generated;
    std::vector<int32_t> block_table;
    struct BlockReturn {  // blocks go back to the pool however this ends
        BlockPool& pool;
        std::vector<int32_t>& blocks;
        ~BlockReturn() { pool.release_all(blocks); }
    } block_return{*block_pool_, block_table};

    const int bs = kv_cache_->block_size();
    const int vocab = model_->config().vocab_size;
    std::vector<float> logits;
    std::vector<int32_t> pending = prompt_ids;  // tokens whose K/V is not cached yet
    int cached = 0;
    bool aborted = false;

    while (result.finish_reason == nullptr) {
        // Prefill in chunks of the token budget; decode one token a step.
        const int n = std::min<int>(static_cast<int>(pending.size()), config_.max_num_batched_tokens);
        while (static_cast<int>(block_table.size()) * bs < cached + n) {
            int32_t b = block_pool_->allocate();
            if (b < 0) throw_runtime("the KV cache has no free block left");
            block_table.push_back(b);
        }
        SequenceSlice slice;
        slice.tokens = pending.data();
        slice.n_tokens = n;
        slice.start_pos = cached;
        slice.block_table = block_table.data();
        slice.want_logits = n == static_cast<int>(pending.size());
        model_->forward({slice}, *kv_cache_, pool_, logits);
        cached += n;
        pending.erase(pending.begin(), pending.begin() + n);
        if (!slice.want_logits) continue;

        // EOS cannot be chosen before min_tokens.
        const bool eos_allowed = static_cast<int>(generated.size()) >= sampling.min_tokens;
        if (!eos_allowed)
            for (int32_t id : tokenizer_->eog_ids()) logits[id] = -INFINITY;
        const int32_t token = Sampler::sample(sampling, logits.data(), vocab, prompt_ids, generated, rng);
        generated.push_back(token);
        const int32_t n_out = static_cast<int32_t>(generated.size());
        const bool at_limit = (sampling.max_tokens > 0 && n_out >= sampling.max_tokens) ||
                              result.prompt_tokens + n_out >= max_model_len_;
        OutputProcessor::Update update = output.push(token, n_out, at_limit);
        result.text += update.delta;
        result.finish_reason = update.finish_reason;
        if (on_delta && !update.delta.empty() && !on_delta(update.delta, false)) {
            aborted = true;
            break;
        }
        pending.push_back(token);
    }
    result.completion_tokens = static_cast<int32_t>(generated.size());
    if (aborted) {
        result.finish_reason = finish_reason::kAbort;
        return result;
    }
    if (on_delta) on_delta("", true);
    return result;
}

}  // namespace vllm
