// Gemma 3's image side (projector type "gemma3"): SigLIP's vision
// transformer over a square image resized to image_size (Gemma3ImageProcessor:
// bilinear, rescale 1/255, normalise by the mmproj's mean and std), then
// Gemma 3's projector: the patch grid average-pooled to soft_tokens (256 in
// the published models: 64x64 patches pooled 4x4), RMS-normed
// (mm.soft_emb_norm, its weight already 1 + w as llama.cpp's converter
// writes it) and projected into the language model (mm.input_projection,
// stored input-major). The prompt holds "\n\n<start_of_image>" + a soft
// token per row + "<end_of_image>\n\n" where the template wrote
// <start_of_image>; the image's soft tokens attend to each other both ways.
// Pan-and-scan crops (do_pan_and_scan, off by default) are not supported.
#include <cmath>
#include <memory>
#include <string>

#include "model/blocks/norms.h"
#include "util/error.h"
#include "vision/image_processing.h"
#include "vision/tower_weights.h"
#include "vision/towers/towers.h"
#include "vision/vit_blocks.h"

namespace vllm {

namespace {

class Gemma3Tower : public VisionTower {
public:
    Gemma3Tower(const ModelSource& mmproj, int language_dim) {
        const TowerWeights w(mmproj);
        image_size_ = static_cast<int>(mmproj.require_int("clip.vision.image_size"));
        patch_ = static_cast<int>(mmproj.require_int("clip.vision.patch_size"));
        dim_ = static_cast<int>(mmproj.require_int("clip.vision.embedding_length"));
        ffn_ = static_cast<int>(mmproj.require_int("clip.vision.feed_forward_length"));
        heads_ = static_cast<int>(mmproj.require_int("clip.vision.attention.head_count"));
        eps_ = static_cast<float>(mmproj.get_float("clip.vision.attention.layer_norm_epsilon", 1e-6));
        const int layers = static_cast<int>(mmproj.require_int("clip.vision.block_count"));
        out_dim_ = static_cast<int>(mmproj.get_int("clip.vision.projection_dim", language_dim));
        if (out_dim_ != language_dim)
            mmproj.fail("the projector's output width " + std::to_string(out_dim_) +
                        " differs from the language model's hidden size " + std::to_string(language_dim));
        if (image_size_ <= 0 || patch_ <= 0 || image_size_ % patch_ != 0 || dim_ <= 0 || heads_ <= 0 ||
            dim_ % heads_ != 0 || layers <= 0)
            mmproj.fail("inconsistent vision hyperparameters (image_size, patch_size, embedding_length, head_count)");
        side_ = image_size_ / patch_;
        pool_ = static_cast<int>(mmproj.get_int("clip.vision.projector.scale_factor", 4));
        if (pool_ <= 0 || side_ % pool_ != 0)
            mmproj.fail("projector scale factor " + std::to_string(pool_) + " does not divide the " +
                        std::to_string(side_) + "-patch grid");
        tokens_side_ = side_ / pool_;
        const std::vector<double> mean = mmproj.get_float_array("clip.vision.image_mean");
        const std::vector<double> stdev = mmproj.get_float_array("clip.vision.image_std");
        for (int c = 0; c < 3; ++c) {
            mean_[c] = mean.size() == 3 ? float(mean[c]) : 0.5f;
            std_[c] = stdev.size() == 3 ? float(stdev[c]) : 0.5f;
        }

        patch_w_ = w.matrix("v.patch_embd.weight", dim_, int64_t(3) * patch_ * patch_);
        patch_b_ = w.floats("v.patch_embd.bias", dim_);
        position_ = w.floats("v.position_embd.weight", int64_t(side_) * side_ * dim_);
        for (int l = 0; l < layers; ++l) {
            const std::string p = "v.blk." + std::to_string(l) + ".";
            VitLayer& L = layers_.emplace_back();
            L.ln1_w = w.floats(p + "ln1.weight", dim_);
            L.ln1_b = w.floats(p + "ln1.bias", dim_);
            L.ln2_w = w.floats(p + "ln2.weight", dim_);
            L.ln2_b = w.floats(p + "ln2.bias", dim_);
            L.q = w.matrix(p + "attn_q.weight", dim_, dim_);
            L.k = w.matrix(p + "attn_k.weight", dim_, dim_);
            L.v = w.matrix(p + "attn_v.weight", dim_, dim_);
            L.o = w.matrix(p + "attn_out.weight", dim_, dim_);
            L.q_b = w.floats(p + "attn_q.bias", dim_);
            L.k_b = w.floats(p + "attn_k.bias", dim_);
            L.v_b = w.floats(p + "attn_v.bias", dim_);
            L.o_b = w.floats(p + "attn_out.bias", dim_);
            L.up = w.matrix(p + "ffn_up.weight", ffn_, dim_);
            L.up_b = w.floats(p + "ffn_up.bias", ffn_);
            L.down = w.matrix(p + "ffn_down.weight", dim_, ffn_);
            L.down_b = w.floats(p + "ffn_down.bias", dim_);
        }
        post_w_ = w.floats("v.post_ln.weight", dim_);
        post_b_ = w.floats("v.post_ln.bias", dim_);
        soft_norm_ = w.floats("mm.soft_emb_norm.weight", dim_);
        projection_ = w.transposed("mm.input_projection.weight", dim_, out_dim_);
        projection_matrix_ = float_matrix(projection_, out_dim_, dim_);
    }

    const std::string& name() const override { return name_; }
    int output_dim() const override { return out_dim_; }
    const ImagePromptFormat& prompt_format() const override { return format_; }

    std::string expand_marker(const ImagePlan& plan) const override {
        std::string s = "\n\n<start_of_image>";
        for (int i = 0; i < plan.num_tokens; ++i) s += format_.placeholder_token;
        return s + "<end_of_image>\n\n";
    }

    ImagePlan plan(const RgbImageView& image, const std::string& what) const override {
        check_rgb_image(image, what);
        ImagePlan p;
        p.num_tokens = tokens_side_ * tokens_side_;
        p.grid = ImageGrid{1, tokens_side_, tokens_side_};
        p.encoder_cost = int64_t(side_) * side_;
        p.bidirectional = true;
        return p;
    }

    PixelValues preprocess(const RgbImageView& image, const std::string& what) const override {
        PixelValues px;
        px.plan = plan(image, what);
        const RgbImage resized = resize_bilinear(image, image_size_, image_size_);
        px.shape = {3, image_size_, image_size_};
        px.data = normalize_chw(resized.view(), 1.0f / 255.0f, mean_, std_);
        return px;
    }

    void encode(const PixelValues& pixels, ThreadPool& pool, float* rows) override {
        const int64_t n = int64_t(side_) * side_, plane = int64_t(image_size_) * image_size_;
        if (pixels.data.size() != size_t(plane) * 3) throw_runtime("gemma3 tower: pixel values of the wrong size");
        // Patches flattened as the conv kernel reads them: (channel, row, column).
        const int64_t patch_len = int64_t(3) * patch_ * patch_;
        std::vector<float> patches(n * patch_len), x(n * dim_);
        for (int py = 0; py < side_; ++py)
            for (int px = 0; px < side_; ++px) {
                float* dst = patches.data() + (int64_t(py) * side_ + px) * patch_len;
                for (int c = 0; c < 3; ++c)
                    for (int ky = 0; ky < patch_; ++ky)
                        for (int kx = 0; kx < patch_; ++kx)
                            *dst++ = pixels.data[c * plane + int64_t(py * patch_ + ky) * image_size_ + px * patch_ + kx];
            }
        kernels::matmul(patch_w_, patches.data(), n, x.data(), pool);
        add_bias_rows(x.data(), patch_b_, n);
        for (int64_t i = 0; i < n * dim_; ++i) x[i] += position_[i];
        for (const VitLayer& layer : layers_) vit_layer(layer, x.data(), n, dim_, ffn_, heads_, eps_, pool);
        layer_norm_rows(x.data(), post_w_.data(), post_b_.data(), x.data(), n, dim_, eps_, pool);

        // Average pooling of the patch grid into tokens_side^2 soft tokens.
        const int64_t m = int64_t(tokens_side_) * tokens_side_;
        std::vector<float> pooled(m * dim_, 0.0f);
        const float inv = 1.0f / float(pool_ * pool_);
        for (int ty = 0; ty < tokens_side_; ++ty)
            for (int tx = 0; tx < tokens_side_; ++tx) {
                float* dst = pooled.data() + (int64_t(ty) * tokens_side_ + tx) * dim_;
                for (int ky = 0; ky < pool_; ++ky)
                    for (int kx = 0; kx < pool_; ++kx) {
                        const float* src = x.data() + (int64_t(ty * pool_ + ky) * side_ + tx * pool_ + kx) * dim_;
                        for (int i = 0; i < dim_; ++i) dst[i] += src[i];
                    }
                for (int i = 0; i < dim_; ++i) dst[i] *= inv;
            }
        // Gemma3RMSNorm (weight already 1 + w), then the projection.
        for (int64_t t = 0; t < m; ++t) {
            float* r = pooled.data() + t * dim_;
            double ss = 0;
            for (int i = 0; i < dim_; ++i) ss += double(r[i]) * r[i];
            const float scale = static_cast<float>(1.0 / std::sqrt(ss / dim_ + eps_));
            for (int i = 0; i < dim_; ++i) r[i] = r[i] * scale * soft_norm_[i];
        }
        kernels::matmul(projection_matrix_, pooled.data(), m, rows, pool);
    }

private:
    std::string name_ = "gemma3";
    ImagePromptFormat format_{"<start_of_image>", "<image_soft_token>"};
    int image_size_ = 0, patch_ = 0, dim_ = 0, ffn_ = 0, heads_ = 0, out_dim_ = 0, side_ = 0, pool_ = 4, tokens_side_ = 0;
    float eps_ = 1e-6f;
    std::array<float, 3> mean_{}, std_{};
    kernels::QuantMatrix patch_w_;
    std::vector<float> patch_b_, position_, post_w_, post_b_, soft_norm_, projection_;
    kernels::QuantMatrix projection_matrix_;
    std::vector<VitLayer> layers_;
};

std::unique_ptr<VisionTower> create_gemma3(const ModelSource& mmproj, int language_dim) {
    return std::make_unique<Gemma3Tower>(mmproj, language_dim);
}

}  // namespace

const VisionArchitecture kGemma3Vision{"gemma3", create_gemma3};

}  // namespace vllm
