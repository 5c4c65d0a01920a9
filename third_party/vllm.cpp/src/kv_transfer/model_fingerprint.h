// The model fingerprint that salts every stored KV block's key, so one
// model's KV can never be loaded into another: a 128-bit digest of
//   - the architecture and every metadata key and value (hyperparameters,
//     RoPE settings, the vocabulary: GGUF keys, or a Hugging Face
//     directory's as its loader translates them),
//   - the tensor table (names, element types, shapes, byte sizes),
//   - a sample of the weights themselves: the first and last 4 KiB of every
//     tensor and 6 evenly spaced 4 KiB windows inside it (reading all of a
//     multi-gigabyte model at every load would cost seconds; any fine-tune
//     or requantization changes the sampled bytes),
//   - the KV layout: its version (kv_cache.h's kKvLayoutVersion), element
//     type, block size, layers, KV heads, head size and each layer's
//     attention window.
// It depends on content only, not on the file's name, path or mtime, so
// copies of one model on several machines share blocks. Not included: the
// kernel build (ISA) that computed the K/V; builds agree to rounding, so a
// block computed by another ISA gives the same output as recomputing it up
// to float rounding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "formats/model_source.h"
#include "kv_cache/kv_cache.h"

namespace vllm::kv_transfer {

// The shape of one KV block as stored: every layer's K then V block, each
// layer in its own shape (layer_shapes; empty: every layer {n_kv_heads,
// head_dim, head_dim}, what the record header's two fields describe).
struct KvGeometry {
    int n_layers = 0;
    int n_kv_heads = 0;
    int head_dim = 0;
    int block_size = 0;
    KvDtype dtype = kDefaultKvDtype;
    std::vector<int> layer_windows;  // per layer, 0: full attention
    std::vector<KvLayerShape> layer_shapes;

    KvLayerShape layer_shape(int layer) const {
        return layer_shapes.empty() ? KvLayerShape{n_kv_heads, head_dim, head_dim} : layer_shapes[layer];
    }
    // Bytes of one layer's K (V) block.
    size_t key_block_bytes(int layer) const {
        return size_t(block_size) * layer_shape(layer).key_token_bytes(dtype);
    }
    size_t value_block_bytes(int layer) const {
        return size_t(block_size) * layer_shape(layer).value_token_bytes(dtype);
    }
    // Bytes of a block's K and V in every layer.
    size_t payload_bytes() const {
        size_t bytes = 0;
        for (int l = 0; l < n_layers; ++l) bytes += layer_shape(l).block_bytes(block_size, dtype);
        return bytes;
    }
};

struct ModelFingerprint {
    uint64_t words[2] = {0, 0};

    // 32 lower-case hex digits: the store's namespace for this model.
    std::string hex() const;
    bool operator==(const ModelFingerprint& other) const {
        return words[0] == other.words[0] && words[1] == other.words[1];
    }
    bool operator!=(const ModelFingerprint& other) const { return !(*this == other); }
};

ModelFingerprint fingerprint_model(const ModelSource& source, const KvGeometry& geometry);

}  // namespace vllm::kv_transfer
