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
        const size_t block = ggml_type_info(static_cast<uint32_t>(type))->block_bytes;
        const uint16_t scale = 0x2000, minimum = 0xa000;  // 2^-7, -2^-7
        const size_t d_offset = type == GgmlType::Q6_K ? block - 2 : 0;  // Q6_K's d ends its block
        const bool has_min = type == GgmlType::Q4_1 || type == GgmlType::Q5_1 || type == GgmlType::Q4_K ||
                             type == GgmlType::Q5_K;
        for (size_t off = 0; off < file.size(); off += block) {
            std::memcpy(&file[off + d_offset], &scale, 2);
            if (has_min) std::memcpy(&file[off + 2], &minimum, 2);
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

}  // namespace

int main(int argc, char** argv) {
    ThreadPool pool(argc > 1 ? std::atoi(argv[1]) : 0);
    const auto type_named = [](const char* name) {
        for (uint32_t id = 0; id < 64; ++id)
            if (const GgmlTypeInfo* info = ggml_type_info(id); info && info->supported && std::string(info->name) == name)
                return static_cast<GgmlType>(id);
        std::fprintf(stderr, "unknown weight type %s\n", name);
        std::exit(2);
    };
    const GgmlType t = argc > 2 ? type_named(argv[2]) : GgmlType::Q4_1;
    const GgmlType down_type = argc > 3 ? type_named(argv[3]) : t;
    std::mt19937 rng(1);
    const int64_t dim = 576, kv = 192, ffn = 1536, vocab = 49152, layers = 30;
    struct Layer {
        Matrix q, k, v, o, gate, up, down;
    };
    std::vector<std::unique_ptr<Layer>> model;
    size_t step_bytes = 0;
    for (int l = 0; l < layers; ++l) {
        model.push_back(std::make_unique<Layer>(Layer{{t, dim, dim, rng}, {t, kv, dim, rng}, {t, kv, dim, rng},
                                                      {t, dim, dim, rng}, {t, ffn, dim, rng}, {t, ffn, dim, rng},
                                                      {down_type, dim, ffn, rng}}));
        const Layer& x = *model.back();
        for (const Matrix* m : {&x.q, &x.k, &x.v, &x.o, &x.gate, &x.up, &x.down}) step_bytes += m->bytes();
    }
    const Matrix output(GgmlType::Q8_0, vocab, dim, rng);
    step_bytes += output.bytes();
    const Matrix big(GgmlType::Q4_1, 131072, dim, rng);

    std::vector<float> x(ffn, 0.5f), q(dim), k(kv), v(kv), o(dim), gate(ffn), up(ffn), down(dim), logits(vocab);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 7) - 3) * 0.25f;
    const double step = best_seconds(5, 20, [&] {
        for (const auto& layer : model) {
            matmul_shared({{&layer->q.m, q.data()}, {&layer->k.m, k.data()}, {&layer->v.m, v.data()}}, x.data(), 1,
                          pool);
            matmul(layer->o.m, x.data(), 1, o.data(), pool);
            matmul_shared({{&layer->gate.m, gate.data()}, {&layer->up.m, up.data()}}, x.data(), 1, pool);
            matmul(layer->down.m, x.data(), 1, down.data(), pool);
        }
        matmul(output.m, x.data(), 1, logits.data(), pool);
    });
    const double lm_head = best_seconds(5, 20, [&] { matmul(output.m, x.data(), 1, logits.data(), pool); });
    std::vector<float> big_out(big.m.rows);
    const double big_s = best_seconds(5, 5, [&] { matmul(big.m, x.data(), 1, big_out.data(), pool); });
    const double bw = read_bandwidth(pool);

    std::printf("%d threads, %s build, layers %s, ffn_down %s\n", pool.size(), active_isa(),
                ggml_type_name(static_cast<uint32_t>(t)).c_str(), ggml_type_name(static_cast<uint32_t>(down_type)).c_str());
    std::printf("read loop: %.1f GB/s\n", bw * 1e-9);
    std::printf("decode-step matmuls: %.1f MB in %.3f ms = %.1f GB/s (%.0f%% of the read loop); %.1f steps/s, "
                "bound %.1f\n",
                step_bytes * 1e-6, step * 1e3, step_bytes / step * 1e-9, 100.0 * step_bytes / step / bw, 1.0 / step,
                bw / step_bytes);
    std::printf("output matrix alone (Q8_0 %lld x %lld, %.1f MB): %.3f ms = %.1f GB/s\n", (long long)vocab,
                (long long)dim, output.bytes() * 1e-6, lm_head * 1e3, output.bytes() / lm_head * 1e-9);
    std::printf("one Q4_1 matrix alone (%lld x %lld, %.1f MB): %.3f ms = %.1f GB/s (%.0f%% of the read loop)\n",
                (long long)big.m.rows, (long long)dim, big.bytes() * 1e-6, big_s * 1e3, big.bytes() / big_s * 1e-9,
                100.0 * big.bytes() / big_s / bw);
    return 0;
}
