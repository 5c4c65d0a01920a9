#include "kv_transfer/model_fingerprint.h"

#include <algorithm>
#include <cstdio>

#include "kv_transfer/checksum.h"

namespace vllm::kv_transfer {

namespace {

// Feeds values into two independently seeded chains (the two words).
class Digest {
public:
    void bytes(const void* data, size_t n) {
        a_ = checksum64(data, n, a_);
        b_ = checksum64(data, n, b_);
    }
    void text(const std::string& s) {
        u64(s.size());
        bytes(s.data(), s.size());
    }
    void u64(uint64_t v) { bytes(&v, sizeof v); }
    void f64(double v) { bytes(&v, sizeof v); }

    void value(const GgufValue& v) {
        u64(static_cast<uint64_t>(v.type));
        switch (v.type) {
            case GgufValueType::STRING: text(v.s); break;
            case GgufValueType::ARRAY:
                u64(static_cast<uint64_t>(v.element_type));
                u64(v.array_size());
                // Element by element, as when each was a GgufValue of its own:
                // fingerprints stay those of earlier builds.
                if (v.element_type == GgufValueType::ARRAY) {
                    for (const GgufValue& item : v.nested) value(item);
                } else {
                    for (size_t k = 0; k < v.array_size(); ++k) value(v.element(k));
                }
                break;
            case GgufValueType::FLOAT32:
            case GgufValueType::FLOAT64: f64(v.f); break;
            default:
                u64(static_cast<uint64_t>(v.i));
                u64(v.u);
        }
    }

    ModelFingerprint result() const { return ModelFingerprint{{a_, b_}}; }

private:
    uint64_t a_ = 0x6b762d7472616e73ull;  // two fixed, different seeds
    uint64_t b_ = 0x666572206b657973ull;
};

constexpr size_t kSampleBytes = 4096;
constexpr int kInnerSamples = 6;

void sample_tensor(Digest& d, const GgufTensor& t) {
    d.text(t.name);
    d.u64(t.type);
    d.u64(t.dims.size());
    for (int64_t dim : t.dims) d.u64(static_cast<uint64_t>(dim));
    d.u64(t.nbytes);
    if (t.data == nullptr || t.nbytes == 0) return;
    const size_t window = std::min(kSampleBytes, t.nbytes);
    d.bytes(t.data, window);
    d.bytes(t.data + t.nbytes - window, window);
    if (t.nbytes <= 2 * kSampleBytes) return;
    const size_t span = t.nbytes - window;
    for (int i = 1; i <= kInnerSamples; ++i) d.bytes(t.data + span * i / (kInnerSamples + 1), window);
}

}  // namespace

std::string ModelFingerprint::hex() const {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(words[0]),
                  static_cast<unsigned long long>(words[1]));
    return buf;
}

ModelFingerprint fingerprint_model(const ModelSource& source, const KvGeometry& geometry) {
    Digest d;
    d.text("vllm-cpp kv block fingerprint v1");
    d.text(source.get_string("general.architecture", ""));
    d.u64(source.metadata().size());
    for (const auto& [key, value] : source.metadata()) {  // std::map: a fixed order
        d.text(key);
        d.value(value);
    }
    d.u64(source.tensors().size());
    for (const GgufTensor& t : source.tensors()) sample_tensor(d, t);
    d.u64(kKvLayoutVersion);
    d.u64(static_cast<uint64_t>(geometry.dtype));
    d.u64(static_cast<uint64_t>(geometry.block_size));
    d.u64(static_cast<uint64_t>(geometry.n_layers));
    d.u64(static_cast<uint64_t>(geometry.n_kv_heads));
    d.u64(static_cast<uint64_t>(geometry.head_dim));
    for (int w : geometry.layer_windows) d.u64(static_cast<uint64_t>(w));
    // Only models whose layers differ add their shapes, so every earlier
    // model's fingerprint (and its stored blocks) stays valid.
    for (const KvLayerShape& shape : geometry.layer_shapes) {
        d.u64(static_cast<uint64_t>(shape.n_kv_heads));
        d.u64(static_cast<uint64_t>(shape.k_head_dim));
        d.u64(static_cast<uint64_t>(shape.v_head_dim));
    }
    return d.result();
}

}  // namespace vllm::kv_transfer
