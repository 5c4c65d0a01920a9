// EmbeddingGemma (llama.cpp's `gemma-embedding`; transformers'
// Gemma3TextModel with use_bidirectional_attention): Gemma 3's layers (the
// sandwich decoder of gemma.cpp with its sqrt(dim) embedding scale, q/k
// norms, a sliding base for the sliding layers, a global layer every 6th)
// attending bidirectionally (traits.encoder: Decoder::self_attention takes
// blocks/bidirectional_attention.h, sliding layers within a symmetric
// window), then the final norm, and sentence-transformers' two Dense
// projections (dense_2, dense_3) where the model has them.
//
// The Dense projections follow the pooling in sentence-transformers and
// llama.cpp; they are linear without bias or activation (what llama.cpp's
// converter and graph keep, and what the HF loader accepts), so applying
// them to every hidden row before pooling gives the same vector for CLS,
// MEAN and LAST: the pooler reads projected rows.
#include <memory>

#include "kernels/cpu/kernels.h"
#include "model/architectures/architectures.h"
#include "model/blocks/embedding.h"
#include "util/error.h"

namespace vllm {

namespace {

constexpr ArchitectureTraits gemma_embedding_traits() {
    ArchitectureTraits t{RopeStyle::HALVES, /*qkv_bias=*/false, /*qk_norm=*/true, FfnActivation::GELU_TANH,
                         /*post_norms=*/true, /*sliding_window=*/true, /*sliding_pattern=*/6,
                         /*rope_theta_sliding=*/10000.0f};
    t.encoder = true;
    t.decoder_layers = true;
    return t;
}

// The decoder's forward, then each hidden row through dense_2 and dense_3.
class GemmaEmbedding final : public DecoderModel {
public:
    GemmaEmbedding(std::unique_ptr<DecoderModel> decoder, kernels::QuantMatrix dense_in, kernels::QuantMatrix dense_out)
        : decoder_(std::move(decoder)), dense_in_(dense_in), dense_out_(dense_out) {}

    const ModelConfig& config() const override { return decoder_->config(); }
    void limit_logits(int64_t) override {}
    int64_t logit_count() const override { return 0; }

    void forward(const std::vector<SequenceSlice>& batch, KVCache& cache, ThreadPool& pool,
                 std::vector<float>& logits) override {
        decoder_->forward(batch, cache, pool, logits);
        if (dense_in_.rows == 0) return;
        for (const SequenceSlice& s : batch) {
            if (s.hidden_rows == nullptr) continue;
            wide_.resize(size_t(s.n_tokens) * dense_in_.rows);
            kernels::matmul(dense_in_, s.hidden_rows, s.n_tokens, wide_.data(), pool);
            kernels::matmul(dense_out_, wide_.data(), s.n_tokens, s.hidden_rows, pool);
        }
    }

private:
    std::unique_ptr<DecoderModel> decoder_;
    kernels::QuantMatrix dense_in_, dense_out_;  // point into the decoder's prepared weights
    std::vector<float> wide_;
};

std::unique_ptr<DecoderModel> build_gemma_embedding(ModelConfig config, ModelWeights weights, int max_model_len) {
    const kernels::QuantMatrix dense_in = weights.dense_in, dense_out = weights.dense_out;
    config.embedding_scale = embedding_scale(config.dim);  // Gemma's sqrt(dim)
    return std::make_unique<GemmaEmbedding>(build_sandwich_decoder(std::move(config), std::move(weights), max_model_len),
                                            dense_in, dense_out);
}

}  // namespace

extern const Architecture kGemmaEmbeddingArchitecture = {"gemma-embedding", gemma_embedding_traits(),
                                                         build_gemma_embedding};

}  // namespace vllm
