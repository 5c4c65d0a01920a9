// matmul / matvec_rows: activation quantization, work split across the
// pool, and cache blocking; the arithmetic is the active build's gemm.
//
// Each thread takes a contiguous run of weight rows (or, for matrices too
// short to share, of tokens) and walks it in chunks of tokens whose
// activations fill about kChunkBytes: a chunk stays in L2 while the
// thread's rows stream past, and each row tile decoded is used for every
// token of the chunk.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/isa.h"
#include "util/error.h"

namespace vllm::kernels {

namespace {

constexpr size_t kChunkBytes = 256 * 1024;
constexpr int64_t kMaxChunkTokens = 256;  // more gained nothing measurable
// Rows go to threads in multiples of this (a multiple of every build's
// tile height, so only the matrix's last rows fall in narrower tiles).
constexpr int64_t kRowUnit = 16;

// The calling thread's buffer for quantized activations, kept between
// calls, 64-byte aligned.
uint8_t* scratch(size_t bytes) {
    thread_local std::unique_ptr<uint8_t[]> buffer;
    thread_local size_t capacity = 0;
    if (capacity < bytes) {
        capacity = std::max(bytes, capacity * 2);
        buffer.reset(new uint8_t[capacity + 63]);
    }
    const auto address = reinterpret_cast<uintptr_t>(buffer.get());
    return buffer.get() + ((64 - address % 64) % 64);
}

GemmFn checked_gemm(const IsaKernels& isa, const QuantMatrix& w) {
    const int slot = kernel_slot(w.type);
    const GgmlTypeInfo* info = ggml_type_info(static_cast<uint32_t>(w.type));
    if (slot < 0 || !info)
        throw_invalid_argument("matmul: no kernels for type " + ggml_type_name(static_cast<uint32_t>(w.type)));
    if (w.cols % info->block_elements != 0)
        throw_invalid_argument("matmul: " + std::to_string(w.cols) + " columns is not a whole number of " +
                               info->name + " blocks");
    return isa.gemm[slot];
}

// The activations as the gemm reads them: x itself for float weights, else
// quantized into the scratch buffer (in parallel when there are many).
const uint8_t* prepare_activations(const IsaKernels& isa, const QuantMatrix& w, const float* x, int64_t n_tokens,
                                   size_t* stride, ThreadPool* pool) {
    const ActKind kind = act_kind(w.type);
    *stride = act_row_bytes(kind, w.cols);
    if (kind == ActKind::F32) return reinterpret_cast<const uint8_t*>(x);
    uint8_t* out = scratch(*stride * static_cast<size_t>(n_tokens));
    const QuantizeFn quantize = kind == ActKind::Q8x32 ? isa.quantize_q8x32 : isa.quantize_q8x256;
    const size_t s = *stride;
    const auto rows = [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) quantize(x + t * w.cols, w.cols, out + t * s);
    };
    if (pool && n_tokens > 1) pool->parallel_for(n_tokens, rows);
    else rows(0, n_tokens);
    return out;
}

void gemm_in_chunks(GemmFn gemm, GemmArgs g) {
    // A multiple of 16 tokens, so only the last chunk has a partial tile.
    const int64_t chunk = std::clamp<int64_t>(static_cast<int64_t>(kChunkBytes / g.x_stride) / 16 * 16, 16, kMaxChunkTokens);
    const int64_t end = g.tok_end;
    for (int64_t t = g.tok_begin; t < end; t += chunk) {
        g.tok_begin = t;
        g.tok_end = std::min(end, t + chunk);
        gemm(g);
    }
}

}  // namespace

void matmul_with(const IsaKernels& isa, const QuantMatrix& w, const float* x, int64_t n_tokens, float* y,
                 ThreadPool& pool) {
    const GemmFn gemm = checked_gemm(isa, w);
    if (n_tokens <= 0 || w.rows <= 0) return;
    size_t x_stride;
    const uint8_t* xq = prepare_activations(isa, w, x, n_tokens, &x_stride, &pool);
    const GemmArgs all{w.data, w.row_bytes, w.cols, 0, w.rows, xq, x_stride, 0, n_tokens, y, w.rows};

    const int64_t row_units = (w.rows + kRowUnit - 1) / kRowUnit;
    const bool split_rows = row_units >= pool.size() || n_tokens < pool.size();
    pool.run([&](int index, int count) {
        GemmArgs g = all;
        if (split_rows) {
            g.row_begin = std::min(w.rows, row_units * index / count * kRowUnit);
            g.row_end = std::min(w.rows, row_units * (index + 1) / count * kRowUnit);
        } else {
            g.tok_begin = n_tokens * index / count;
            g.tok_end = n_tokens * (index + 1) / count;
        }
        if (g.row_begin < g.row_end && g.tok_begin < g.tok_end) gemm_in_chunks(gemm, g);
    });
}

void matmul(const QuantMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
    matmul_with(active_kernels(), w, x, n_tokens, y, pool);
}

void matvec_rows(const QuantMatrix& w, const float* x, int64_t row_begin, int64_t row_end, float* y) {
    const IsaKernels& isa = active_kernels();
    const GemmFn gemm = checked_gemm(isa, w);
    if (row_begin >= row_end) return;
    size_t x_stride;
    const uint8_t* xq = prepare_activations(isa, w, x, 1, &x_stride, nullptr);
    gemm({w.data + row_begin * w.row_bytes, w.row_bytes, w.cols, 0, row_end - row_begin, xq, x_stride, 0, 1, y,
          row_end - row_begin});
}

}  // namespace vllm::kernels
