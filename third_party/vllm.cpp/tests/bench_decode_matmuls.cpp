// How close the matmul kernels alone come to the memory bandwidth in a
// batch-1 decode step (issue 17's bandwidth bound): SmolLM2-135M's matmuls
// (30 layers of Q4_1 q/k/v, o, gate/up, down, and the tied 49152 x 576
// output matrix as the engine prepares it, interleaved Q8_0; 96 MB, three
// times the last-level cache) run token after token on a pool of
// `threads`, against a read loop over a 512 MiB buffer on the same pool,
// and one big Q4_1 matrix alone. Weights are random (speed does not depend
// on the values); the bytes counted are what the prepared matrices hold.
// TYPE replaces Q4_1 in the layers and DOWN (default: TYPE) in ffn_down,
// as llama.cpp's mixes for SmolLM2 do (Q5_K_M: Q5_1 and Q5_K; Q6_K: Q8_0
// and Q6_K; the 576-wide rows fit no 256-element super-block).
//
//   bench_decode_matmuls [threads [TYPE [DOWN]]]   (default: the pool's
//                                                  default size, Q4_1)
//   bench_decode_matmuls threads f16|bf16   the same model in F16 (as the
//       135M release ships) or BF16 at 1..9 positions a step, the cost of
//       speculative decoding's verify forward: each count's best time over
//       alternating rounds against 1 position's, the step and the output
//       matrix alone
//   bench_decode_matmuls threads TYPE positions   the same for TYPE
//
// Wall time, best of several rounds: run it on a quiet machine.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "util/thread_pool.h"

using namespace vllm;
using namespace vllm::kernels;

namespace {

// One weight matrix: random quants with moderate fp16 scales (the first
// two bytes of each block, and Q4_1's minimum after it), prepared for the
// active build as the engine's loader does.
struct Matrix {
    std::vector<uint8_t> file, prepared_storage;
    QuantMatrix m;

    Matrix(GgmlType type, int64_t rows, int64_t cols, std::mt19937& rng) {
        const size_t row_bytes = ggml_row_bytes(type, cols);
        file.resize(row_bytes * rows);
        for (size_t i = 0; i < file.size(); i += 4) {
            const uint32_t r = rng();
            std::memcpy(&file[i], &r, std::min<size_t>(4, file.size() - i));
        }
        if (type == GgmlType::F16) {
            // Finite halves of magnitude 1/8..1/2 (random bits would hold NaNs).
            for (size_t i = 0; i + 2 <= file.size(); i += 2) {
                uint16_t h;
                std::memcpy(&h, &file[i], 2);
                h = static_cast<uint16_t>((h & 0x87ff) | 0x3000);
                std::memcpy(&file[i], &h, 2);
            }
        } else {
            const size_t block = ggml_type_info(static_cast<uint32_t>(type))->block_bytes;
            const uint16_t scale = 0x2000, minimum = 0xa000;  // 2^-7, -2^-7
            const size_t d_offset = type == GgmlType::Q6_K ? block - 2 : 0;  // Q6_K's d ends its block
            const bool has_min = type == GgmlType::Q4_1 || type == GgmlType::Q5_1 || type == GgmlType::Q4_K ||
                                 type == GgmlType::Q5_K;
            for (size_t off = 0; off < file.size(); off += block) {
                std::memcpy(&file[off + d_offset], &scale, 2);
                if (has_min) std::memcpy(&file[off + 2], &minimum, 2);
            }
        }
        m = prepare_for_matmul({type, file.data(), rows, cols, row_bytes}, prepared_storage);
        if (m.data != file.data()) file = {};  // the engine keeps only the copy too
    }
    size_t bytes() const { return size_t(m.rows) * m.row_bytes; }
};

double best_seconds(int rounds, int calls, const std::function<void()>& fn) {
    using clock = std::chrono::steady_clock;
    fn();  // warm-up
    double best = 1e30;
    for (int r = 0; r < rounds; ++r) {
        const auto start = clock::now();
        for (int c = 0; c < calls; ++c) fn();
        best = std::min(best, std::chrono::duration<double>(clock::now() - start).count() / calls);
    }
    return best;
}

// Bytes/s of summing a 512 MiB buffer on the pool (every page written first).
double read_bandwidth(ThreadPool& pool) {
    const size_t words = (size_t(512) << 20) / 8;
    std::vector<uint64_t> buffer(words);
    for (size_t i = 0; i < words; ++i) buffer[i] = i;
    const int64_t slices = pool.size();
    std::vector<uint64_t> sums(slices);
    const double s = best_seconds(5, 1, [&] {
        pool.for_each_chunk(slices, [&](int64_t t) {
            const uint64_t* p = buffer.data() + words * t / slices;
            const size_t n = words * (t + 1) / slices - words * t / slices;
            uint64_t a = 0, b = 0, c = 0, d = 0;
            for (size_t i = 0; i + 4 <= n; i += 4) a += p[i], b += p[i + 1], c += p[i + 2], d += p[i + 3];
            sums[t] += a + b + c + d;
        });
    });
    return words * 8.0 / s;
}

constexpr int64_t kDim = 576, kKv = 192, kFfn = 1536, kVocab = 49152, kLayers = 30;
constexpr int64_t kMaxPositions = 9;

struct Layer {
    Matrix q, k, v, o, gate, up, down;
};

// SmolLM2-135M's matrices in `type` (ffn_down in `down_type`), the output
// matrix in `output_type`.
struct Model {
    std::vector<std::unique_ptr<Layer>> layers;
    std::unique_ptr<Matrix> output;
    size_t step_bytes = 0;

    Model(GgmlType type, GgmlType down_type, GgmlType output_type, std::mt19937& rng) {
        for (int l = 0; l < kLayers; ++l) {
            layers.push_back(std::make_unique<Layer>(Layer{{type, kDim, kDim, rng}, {type, kKv, kDim, rng},
                                                           {type, kKv, kDim, rng}, {type, kDim, kDim, rng},
                                                           {type, kFfn, kDim, rng}, {type, kFfn, kDim, rng},
                                                           {down_type, kDim, kFfn, rng}}));
            const Layer& x = *layers.back();
            for (const Matrix* m : {&x.q, &x.k, &x.v, &x.o, &x.gate, &x.up, &x.down}) step_bytes += m->bytes();
        }
        output = std::make_unique<Matrix>(output_type, kVocab, kDim, rng);
        step_bytes += output->bytes();
    }
};

// Room for every matmul's activations and outputs at up to kMaxPositions
// positions (the activations are the same for every matrix: only the
// weights' bytes and the arithmetic are measured).
struct Buffers {
    std::vector<float> x, q, k, v, o, gate, up, down, logits;
    Buffers()
        : x(kFfn * kMaxPositions), q(kDim * kMaxPositions), k(kKv * kMaxPositions), v(kKv * kMaxPositions),
          o(kDim * kMaxPositions), gate(kFfn * kMaxPositions), up(kFfn * kMaxPositions), down(kDim * kMaxPositions),
          logits(kVocab * kMaxPositions) {
        for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 7) - 3) * 0.25f;
    }
};

// A forward's matmuls at n positions (one activation buffer serves every
// matrix, n rows of its input width).
void step_matmuls(const Model& model, int64_t n, Buffers& b, ThreadPool& pool) {
    for (const auto& layer : model.layers) {
        matmul_shared({{&layer->q.m, b.q.data()}, {&layer->k.m, b.k.data()}, {&layer->v.m, b.v.data()}}, b.x.data(), n,
                      pool);
        matmul(layer->o.m, b.x.data(), n, b.o.data(), pool);
        matmul_shared({{&layer->gate.m, b.gate.data()}, {&layer->up.m, b.up.data()}}, b.x.data(), n, pool);
        matmul(layer->down.m, b.x.data(), n, b.down.data(), pool);
    }
    matmul(model.output->m, b.x.data(), n, b.logits.data(), pool);
}

// `model` at 1..kMaxPositions positions, counts alternating within each
// round so that load on a shared machine falls on all of them alike.
void positions(const Model& model, const char* name, ThreadPool& pool) {
    Buffers b;
    constexpr int kRounds = 8;
    double step[kMaxPositions + 1], lm_head[kMaxPositions + 1];
    std::fill(std::begin(step), std::end(step), 1e30);
    std::fill(std::begin(lm_head), std::end(lm_head), 1e30);
    for (int r = 0; r < kRounds; ++r) {
        for (int64_t n = 1; n <= kMaxPositions; ++n) {
            step[n] = std::min(step[n], best_seconds(1, 3, [&] { step_matmuls(model, n, b, pool); }));
            lm_head[n] = std::min(lm_head[n], best_seconds(1, 5, [&] {
                                      matmul(model.output->m, b.x.data(), n, b.logits.data(), pool);
                                  }));
        }
    }
    std::printf("%d threads, %s build, %s model (%.1f MB a step), best of %d alternating rounds\n", pool.size(),
                active_isa(), name, model.step_bytes * 1e-6, kRounds);
    std::printf("%-10s %12s %10s %16s %10s\n", "positions", "step ms", "x 1 pos", "output ms", "x 1 pos");
    for (int64_t n = 1; n <= kMaxPositions; ++n)
        std::printf("%-10lld %12.3f %10.2f %16.3f %10.2f\n", static_cast<long long>(n), step[n] * 1e3, step[n] / step[1],
                    lm_head[n] * 1e3, lm_head[n] / lm_head[1]);
}

}  // namespace

int main(int argc, char** argv) {
    ThreadPool pool(argc > 1 ? std::atoi(argv[1]) : 0);
    std::mt19937 rng(1);
    if (argc > 2 && (std::strcmp(argv[2], "f16") == 0 || std::strcmp(argv[2], "bf16") == 0)) {
        const GgmlType type = argv[2][0] == 'f' ? GgmlType::F16 : GgmlType::BF16;
        positions(Model(type, type, type, rng), argv[2], pool);
        return 0;
    }
    const auto type_named = [](const char* name) {
        for (uint32_t id = 0; id < 64; ++id)
            if (const GgmlTypeInfo* info = ggml_type_info(id); info && info->supported && std::string(info->name) == name)
                return static_cast<GgmlType>(id);
        std::fprintf(stderr, "unknown weight type %s\n", name);
        std::exit(2);
    };
    const GgmlType t = argc > 2 ? type_named(argv[2]) : GgmlType::Q4_1;
    if (argc > 3 && std::strcmp(argv[3], "positions") == 0) {
        positions(Model(t, t, GgmlType::Q8_0, rng), argv[2], pool);
        return 0;
    }
    const GgmlType down_type = argc > 3 ? type_named(argv[3]) : t;
    const Model model(t, down_type, GgmlType::Q8_0, rng);
    const Matrix big(GgmlType::Q4_1, 131072, kDim, rng);
    Buffers b;
    const double step = best_seconds(5, 20, [&] { step_matmuls(model, 1, b, pool); });
    const double lm_head = best_seconds(5, 20, [&] { matmul(model.output->m, b.x.data(), 1, b.logits.data(), pool); });
    std::vector<float> big_out(big.m.rows);
    const double big_s = best_seconds(5, 5, [&] { matmul(big.m, b.x.data(), 1, big_out.data(), pool); });
    const double bw = read_bandwidth(pool);

    std::printf("%d threads, %s build, layers %s, ffn_down %s\n", pool.size(), active_isa(),
                ggml_type_name(static_cast<uint32_t>(t)).c_str(), ggml_type_name(static_cast<uint32_t>(down_type)).c_str());
    std::printf("read loop: %.1f GB/s\n", bw * 1e-9);
    std::printf("decode-step matmuls: %.1f MB in %.3f ms = %.1f GB/s (%.0f%% of the read loop); %.1f steps/s, "
                "bound %.1f\n",
                model.step_bytes * 1e-6, step * 1e3, model.step_bytes / step * 1e-9, 100.0 * model.step_bytes / step / bw,
                1.0 / step, bw / model.step_bytes);
    std::printf("output matrix alone (Q8_0 %lld x %lld, %.1f MB): %.3f ms = %.1f GB/s\n", (long long)kVocab,
                (long long)kDim, model.output->bytes() * 1e-6, lm_head * 1e3, model.output->bytes() / lm_head * 1e-9);
    std::printf("one Q4_1 matrix alone (%lld x %lld, %.1f MB): %.3f ms = %.1f GB/s (%.0f%% of the read loop)\n",
                (long long)big.m.rows, (long long)kDim, big.bytes() * 1e-6, big_s * 1e3, big.bytes() / big_s * 1e-9,
                100.0 * big.bytes() / big_s / bw);
    return 0;
}
