// Qwen2.5-VL's vision tower (transformers' Qwen2_5_VisionTransformer,
// llama.cpp's projector type "qwen2.5vl_merger"): the image processor of
// qwen_image_processor.h, then
//   patch embedding: a Conv3d over (2 temporal x 14 x 14) patches, run as
//     two matmuls (llama.cpp's converter splits it by temporal index into
//     v.patch_embd.weight and v.patch_embd.weight.1) summed;
//   the patches reordered window by window (windows of window_size pixels,
//     4 x 4 merged units at 112 / (14 * 2)), each merged unit's 2 x 2
//     patches kept together;
//   blocks: RMS norm, attention (q/k/v/out biases, 2-D RoPE: the first half
//     of each head's rotated pairs by the patch's row, the second by its
//     column, rotating halves) within each window, or over the whole image
//     at every n_wa_pattern-th block (fullatt_block_indexes), RMS norm,
//     SwiGLU MLP with biases;
//   the patch merger: RMS norm, each merged unit's 4 patches as one row,
//     Linear + GELU + Linear to the language model's hidden size, back in
//     the image's (row-major merged-unit) order.
// The weights stay in the file's types (matmul reads F32/F16/BF16 and the
// quantized ones); norms and biases are expanded to float.
#include <algorithm>
#include <cmath>
#include <memory>

#include "dtype/ggml_type.h"
#include "formats/model_source.h"
#include "kernels/cpu/kernels.h"
#include "model/blocks/activations.h"
#include "model/blocks/norms.h"
#include "util/error.h"
#include "vision/towers/qwen_image_processor.h"
#include "vision/towers/qwen25vl.h"
#include "vision/tower_weights.h"
#include "vision/vit_blocks.h"

namespace vllm {

namespace {

constexpr const char* kProjectorType = "qwen2.5vl_merger";
// transformers' Qwen2.5-VL fixes these (not in its config): the vision
// RoPE base and the norms' epsilon; llama.cpp reads the epsilon from the file.
constexpr float kVisionRopeBase = 10000.0f;

struct VitLayer {
    kernels::QuantMatrix wq, wk, wv, wo, gate, up, down;
    std::vector<float> bq, bk, bv, bo, b_gate, b_up, b_down, norm1, norm2;
    bool full_attention = false;
};

// The windows of one image: the merged units (row-major index in the image)
// in window order, and where each window starts in that order.
struct WindowOrder {
    std::vector<int> units;
    std::vector<int> window_starts;  // plus units.size() at the end
};

WindowOrder window_order(int units_h, int units_w, int window_units) {
    WindowOrder order;
    // transformers pads each side to a whole number of windows plus one
    // whole window when it divides exactly; the padding's windows are empty
    // and dropped either way.
    for (int wh = 0; wh * window_units < units_h; ++wh)
        for (int ww = 0; ww * window_units < units_w; ++ww) {
            order.window_starts.push_back(static_cast<int>(order.units.size()));
            for (int r = wh * window_units; r < std::min(units_h, (wh + 1) * window_units); ++r)
                for (int c = ww * window_units; c < std::min(units_w, (ww + 1) * window_units); ++c)
                    order.units.push_back(r * units_w + c);
        }
    order.window_starts.push_back(static_cast<int>(order.units.size()));
    return order;
}


class Qwen25VlTower final : public VisionTower {
public:
    Qwen25VlTower(const ModelSource& file, int language_dim) : weights_(file) {
        const std::string v = "clip.vision.";
        hidden_ = static_cast<int>(file.require_int(v + "embedding_length"));
        ffn_ = static_cast<int>(file.require_int(v + "feed_forward_length"));
        heads_ = static_cast<int>(file.require_int(v + "attention.head_count"));
        const int layers = static_cast<int>(file.require_int(v + "block_count"));
        output_dim_ = static_cast<int>(file.require_int(v + "projection_dim"));
        eps_ = static_cast<float>(file.get_float(v + "attention.layer_norm_epsilon", 1e-6));
        processor_.patch_size = static_cast<int>(file.get_int(v + "patch_size", 14));
        processor_.merge_size = static_cast<int>(file.get_int(v + "spatial_merge_size", 2));
        processor_.min_pixels = file.get_int(v + "image_min_pixels", processor_.min_pixels);
        processor_.max_pixels = file.get_int(v + "image_max_pixels", processor_.max_pixels);
        window_size_ = static_cast<int>(file.get_int(v + "window_size", 112));
        const int64_t pattern = file.get_int(v + "n_wa_pattern", 0);
        for (const auto& [key, field] : {std::pair{"image_mean", &processor_.mean}, std::pair{"image_std", &processor_.std}}) {
            const std::vector<double> values = file.get_float_array(v + key);
            if (values.empty()) continue;
            if (values.size() != 3) file.fail(v + key + " must have 3 values (R, G, B)");
            for (int c = 0; c < 3; ++c) (*field)[c] = static_cast<float>(values[c]);
        }
        if (hidden_ <= 0 || heads_ <= 0 || hidden_ % heads_ != 0 || (hidden_ / heads_) % 4 != 0)
            file.fail(v + "embedding_length " + std::to_string(hidden_) + " and " + v + "attention.head_count " +
                      std::to_string(heads_) + " do not make heads of a multiple of 4 floats (the 2-D RoPE's)");
        if (layers <= 0 || ffn_ <= 0) file.fail(v + "block_count and feed_forward_length must be positive");
        if (pattern <= 0)
            file.fail(v + "n_wa_pattern is missing (which blocks attend over the whole image: Qwen2.5-VL's "
                          "fullatt_block_indexes)");
        if (processor_.patch_size <= 0 || processor_.merge_size <= 0 || window_size_ <= 0 ||
            window_size_ % (processor_.patch_size * processor_.merge_size) != 0)
            file.fail(v + "window_size " + std::to_string(window_size_) + " is not a positive multiple of the patch (" +
                      std::to_string(processor_.patch_size) + ") times the spatial merge (" +
                      std::to_string(processor_.merge_size) + ")");
        if (processor_.min_pixels <= 0 || processor_.max_pixels < processor_.min_pixels)
            file.fail(v + "image_min_pixels / image_max_pixels must be positive, the minimum not above the maximum");
        if (output_dim_ != language_dim)
            file.fail(v + "projection_dim " + std::to_string(output_dim_) + " differs from the language model's " +
                      "hidden size " + std::to_string(language_dim));

        const int p = processor_.patch_size, unit = processor_.merge_size * processor_.merge_size;
        patch_ = {weights_.matrix("v.patch_embd.weight", hidden_, 3 * p * p),
                  weights_.matrix("v.patch_embd.weight.1", hidden_, 3 * p * p)};
        for (int l = 0; l < layers; ++l) {
            const std::string b = "v.blk." + std::to_string(l) + ".";
            VitLayer layer;
            layer.wq = weights_.matrix(b + "attn_q.weight", hidden_, hidden_);
            layer.wk = weights_.matrix(b + "attn_k.weight", hidden_, hidden_);
            layer.wv = weights_.matrix(b + "attn_v.weight", hidden_, hidden_);
            layer.wo = weights_.matrix(b + "attn_out.weight", hidden_, hidden_);
            layer.gate = weights_.matrix(b + "ffn_gate.weight", ffn_, hidden_);
            layer.up = weights_.matrix(b + "ffn_up.weight", ffn_, hidden_);
            layer.down = weights_.matrix(b + "ffn_down.weight", hidden_, ffn_);
            layer.bq = weights_.floats(b + "attn_q.bias", hidden_);
            layer.bk = weights_.floats(b + "attn_k.bias", hidden_);
            layer.bv = weights_.floats(b + "attn_v.bias", hidden_);
            layer.bo = weights_.floats(b + "attn_out.bias", hidden_);
            layer.b_gate = weights_.floats(b + "ffn_gate.bias", ffn_);
            layer.b_up = weights_.floats(b + "ffn_up.bias", ffn_);
            layer.b_down = weights_.floats(b + "ffn_down.bias", hidden_);
            layer.norm1 = weights_.floats(b + "ln1.weight", hidden_);
            layer.norm2 = weights_.floats(b + "ln2.weight", hidden_);
            layer.full_attention = (l + 1) % pattern == 0;
            layers_.push_back(std::move(layer));
        }
        merger_norm_ = weights_.floats("v.post_ln.weight", hidden_);
        merger_in_ = weights_.matrix("mm.0.weight", int64_t(hidden_) * unit, int64_t(hidden_) * unit);
        merger_in_bias_ = weights_.floats("mm.0.bias", hidden_ * unit);
        merger_out_ = weights_.matrix("mm.2.weight", output_dim_, int64_t(hidden_) * unit);
        merger_out_bias_ = weights_.floats("mm.2.bias", output_dim_);
        const int head_dim = hidden_ / heads_, quarter = head_dim / 4;
        for (int j = 0; j < quarter; ++j)
            inv_freq_.push_back(1.0f / std::pow(kVisionRopeBase, static_cast<float>(2 * j) / static_cast<float>(head_dim / 2)));
    }

    const std::string& name() const override { return name_; }
    int output_dim() const override { return output_dim_; }
    const ImagePromptFormat& prompt_format() const override { return format_; }
    std::string expand_marker(const ImagePlan& plan) const override {
        std::string out;
        for (int i = 0; i < plan.num_tokens; ++i) out += format_.placeholder_token;
        return out;
    }

    ImagePlan plan(const RgbImageView& image, const std::string& what) const override {
        check_rgb_image(image, what);
        const auto [height, width] = qwen_smart_resize(image.height, image.width, processor_, what);
        ImagePlan plan;
        plan.grid = {1, height / processor_.patch_size, width / processor_.patch_size};
        plan.spatial_merge = processor_.merge_size;
        plan.encoder_cost = int64_t(plan.grid.h) * plan.grid.w;
        plan.num_tokens = static_cast<int>(plan.encoder_cost / (processor_.merge_size * processor_.merge_size));
        return plan;
    }

    PixelValues preprocess(const RgbImageView& image, const std::string& what) const override {
        PixelValues pixels;
        pixels.plan = plan(image, what);
        int grid_h = 0, grid_w = 0;
        pixels.data = qwen_pixel_values(image, processor_, what, grid_h, grid_w);
        pixels.shape = {int64_t(grid_h) * grid_w, int64_t(3) * processor_.temporal_patch_size * processor_.patch_size *
                                                      processor_.patch_size};
        return pixels;
    }

    void encode(const PixelValues& pixels, ThreadPool& pool, float* rows) override;

private:
    void attention(const std::vector<int>& starts, ThreadPool& pool);

    TowerWeights weights_;  // the mmproj file's v.* / mm.* tensors
    std::string name_ = kProjectorType;
    ImagePromptFormat format_{"<|image_pad|>", "<|image_pad|>"};
    QwenImageProcessorConfig processor_;
    int hidden_ = 0, ffn_ = 0, heads_ = 0, output_dim_ = 0, window_size_ = 112;
    float eps_ = 1e-6f;
    std::vector<kernels::QuantMatrix> patch_;
    std::vector<VitLayer> layers_;
    std::vector<float> merger_norm_, merger_in_bias_, merger_out_bias_, inv_freq_;
    kernels::QuantMatrix merger_in_, merger_out_;
    // Scratch for one image (encode is not reentrant).
    std::vector<float> x_, normed_, q_, k_, v_, attn_, gate_, up_, cos_, sin_;
};

// Bidirectional attention of every head within each segment [starts[i],
// starts[i + 1]) of the rows (the ViT's attention over each segment's rows),
// RoPE applied to q_ and k_ already; the heads' outputs into attn_.
void Qwen25VlTower::attention(const std::vector<int>& starts, ThreadPool& pool) {
    const int head_dim = hidden_ / heads_;
    for (size_t s = 0; s + 1 < starts.size(); ++s) {
        const int rows = starts[s + 1] - starts[s];
        if (rows == 0) continue;  // a padding window
        const size_t first = size_t(starts[s]) * hidden_;
        vit_attention(&q_[first], &k_[first], &v_[first], &attn_[first], rows, heads_, head_dim, pool);
    }
}

void Qwen25VlTower::encode(const PixelValues& pixels, ThreadPool& pool, float* rows) {
    const ImagePlan& plan = pixels.plan;
    const int m = processor_.merge_size, unit = m * m, p = processor_.patch_size, t = processor_.temporal_patch_size;
    const int n = plan.grid.h * plan.grid.w;
    const int64_t row_len = int64_t(3) * t * p * p, frame = int64_t(p) * p;
    if (plan.grid.t != 1 || t != 2 || pixels.shape.size() != 2 || pixels.shape[0] != n || pixels.shape[1] != row_len ||
        pixels.data.size() != size_t(n) * row_len || plan.grid.h % m != 0 || plan.grid.w % m != 0)
        throw_invalid_argument("qwen2.5vl_merger: pixel values do not match the image's plan");
    const int units_h = plan.grid.h / m, units_w = plan.grid.w / m, n_units = units_h * units_w;
    const WindowOrder order = window_order(units_h, units_w, window_size_ / (p * m));

    // Patch embedding, each temporal frame's channels gathered into the
    // rows its half of the Conv3d reads, the two halves summed; rows go to
    // the window order (patch row `unit_pos * unit + i` is unit
    // order.units[unit_pos]'s i-th patch).
    std::vector<float> frame_rows(size_t(n) * 3 * frame), embedded(size_t(n) * hidden_);
    x_.assign(size_t(n) * hidden_, 0.0f);
    for (int tt = 0; tt < t; ++tt) {
        for (int u = 0; u < n_units; ++u)
            for (int i = 0; i < unit; ++i) {
                const float* src = &pixels.data[size_t(order.units[u] * unit + i) * row_len];
                float* dst = &frame_rows[size_t(u * unit + i) * 3 * frame];
                for (int c = 0; c < 3; ++c) std::copy_n(src + (c * t + tt) * frame, frame, dst + c * frame);
            }
        kernels::matmul(patch_[tt], frame_rows.data(), n, embedded.data(), pool);
        for (size_t i = 0; i < x_.size(); ++i) x_[i] += embedded[i];
    }
    // Each patch's 2-D RoPE angles: its row for the first quarter of the
    // head's dims' pairs, its column for the second.
    const int head_dim = hidden_ / heads_, half = head_dim / 2, quarter = head_dim / 4;
    cos_.resize(size_t(n) * half);
    sin_.resize(size_t(n) * half);
    for (int u = 0; u < n_units; ++u)
        for (int i = 0; i < unit; ++i) {
            const int r = u * unit + i, unit_index = order.units[u];
            const float row = static_cast<float>((unit_index / units_w) * m + i / m);
            const float col = static_cast<float>((unit_index % units_w) * m + i % m);
            for (int j = 0; j < half; ++j) {
                const float angle = (j < quarter ? row : col) * inv_freq_[j % quarter];
                cos_[size_t(r) * half + j] = std::cos(angle);
                sin_[size_t(r) * half + j] = std::sin(angle);
            }
        }
    std::vector<int> windows, whole = {0, n};
    for (int start : order.window_starts) windows.push_back(start * unit);

    normed_.resize(x_.size());
    q_.resize(x_.size());
    k_.resize(x_.size());
    v_.resize(x_.size());
    attn_.resize(x_.size());
    gate_.resize(size_t(n) * ffn_);
    up_.resize(size_t(n) * ffn_);
    std::vector<float> out(x_.size());
    for (const VitLayer& layer : layers_) {
        rms_norm_rows(x_.data(), layer.norm1.data(), normed_.data(), n, hidden_, eps_, pool);
        kernels::matmul_shared({{&layer.wq, q_.data()}, {&layer.wk, k_.data()}, {&layer.wv, v_.data()}}, normed_.data(), n,
                               pool);
        add_bias_rows(q_.data(), layer.bq, n);
        add_bias_rows(k_.data(), layer.bk, n);
        add_bias_rows(v_.data(), layer.bv, n);
        for (int r = 0; r < n; ++r)
            for (int h = 0; h < heads_; ++h)
                for (float* vec : {&q_[size_t(r) * hidden_ + size_t(h) * head_dim], &k_[size_t(r) * hidden_ + size_t(h) * head_dim]})
                    for (int j = 0; j < half; ++j) {
                        const float c = cos_[size_t(r) * half + j], s = sin_[size_t(r) * half + j];
                        const float a = vec[j], b = vec[j + half];
                        vec[j] = a * c - b * s;
                        vec[j + half] = b * c + a * s;
                    }
        attention(layer.full_attention ? whole : windows, pool);
        kernels::matmul(layer.wo, attn_.data(), n, out.data(), pool);
        add_bias_rows(out.data(), layer.bo, n);
        for (size_t i = 0; i < x_.size(); ++i) x_[i] += out[i];

        rms_norm_rows(x_.data(), layer.norm2.data(), normed_.data(), n, hidden_, eps_, pool);
        kernels::matmul_shared({{&layer.gate, gate_.data()}, {&layer.up, up_.data()}}, normed_.data(), n, pool);
        add_bias_rows(gate_.data(), layer.b_gate, n);
        add_bias_rows(up_.data(), layer.b_up, n);
        for (size_t i = 0; i < gate_.size(); ++i) gate_[i] = silu(gate_[i]) * up_[i];
        kernels::matmul(layer.down, gate_.data(), n, out.data(), pool);
        add_bias_rows(out.data(), layer.b_down, n);
        for (size_t i = 0; i < x_.size(); ++i) x_[i] += out[i];
    }

    // The merger: each unit's 4 normed patch rows are one row of 4 * hidden.
    rms_norm_rows(x_.data(), merger_norm_.data(), normed_.data(), n, hidden_, 1e-6f, pool);
    std::vector<float> merged(size_t(n_units) * hidden_ * unit), projected(size_t(n_units) * output_dim_);
    kernels::matmul(merger_in_, normed_.data(), n_units, merged.data(), pool);
    add_bias_rows(merged.data(), merger_in_bias_, n_units);
    for (float& value : merged) value = gelu_erf(value);
    kernels::matmul(merger_out_, merged.data(), n_units, projected.data(), pool);
    add_bias_rows(projected.data(), merger_out_bias_, n_units);
    for (int u = 0; u < n_units; ++u)
        std::copy_n(&projected[size_t(u) * output_dim_], output_dim_, rows + size_t(order.units[u]) * output_dim_);
}

std::unique_ptr<VisionTower> create_qwen25vl_tower(const ModelSource& mmproj, int language_dim) {
    return std::make_unique<Qwen25VlTower>(mmproj, language_dim);
}

}  // namespace

extern const VisionArchitecture kQwen25VlVision = {kProjectorType, create_qwen25vl_tower};

}  // namespace vllm
