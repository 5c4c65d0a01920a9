// matmul / matmul_shared / matmul_grouped / matvec_rows: activation quantization (once per
// input, however many matrices share it), work split across the pool, and
// cache blocking; the arithmetic is the active build's gemm.
//
// Threads take contiguous runs of weight rows (or, for matrices too short
// to share, of tokens) and walk each in chunks of tokens whose
// activations fill about kChunkBytes: a chunk stays in L2 while the
// thread's rows stream past, and each row tile decoded is used for every
// token of the chunk.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/interleave.h"
#include "kernels/cpu/isa.h"
#include "util/error.h"

namespace vllm::kernels {

namespace {

constexpr size_t kChunkBytes = 256 * 1024;
constexpr int64_t kMaxChunkTokens = 256;  // more gained nothing measurable
// Rows go to threads in multiples of this (a multiple of every build's
// tile height, so only the matrix's last rows fall in narrower tiles, and
// of the interleaved layout's row groups, which must not be split).
constexpr int64_t kRowUnit = 16;
static_assert(kRowUnit % kInterleaveRows == 0, "threads take whole interleaved row groups");

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
    if (w.layout == WeightLayout::kRows) return isa.gemm[slot];
    if (isa.gemm_interleaved[slot] == nullptr)
        throw_invalid_argument(std::string("matmul: the ") + isa.name + " build has no kernel for interleaved " +
                               info->name);
    if (w.type == GgmlType::Q8_0 && w.q8_0_bytes != isa.q8_0_bytes)
        throw_invalid_argument(std::string("matmul: interleaved Q8_0 prepared for another build than ") + isa.name +
                               " (its weights' bytes differ)");
    return isa.gemm_interleaved[slot];
}

// The build's quantizer of activations of a quantized kind.
QuantizeFn quantizer(const IsaKernels& isa, ActKind kind) {
    return kind == ActKind::Q8x32 ? isa.quantize_q8x32 : kind == ActKind::Q8x256 ? isa.quantize_q8x256 : isa.quantize_bf16;
}

// The activations as the gemm reads them: x itself for float weights, else
// quantized into the scratch buffer (in parallel when there are many).
const uint8_t* prepare_activations(const IsaKernels& isa, const QuantMatrix& w, const float* x, int64_t n_tokens,
                                   size_t* stride, ThreadPool* pool) {
    const ActKind kind = activation_kind(isa, w.type);
    *stride = act_row_bytes(kind, w.cols);
    if (kind == ActKind::F32) return reinterpret_cast<const uint8_t*>(x);
    uint8_t* out = scratch(*stride * static_cast<size_t>(n_tokens));
    const QuantizeFn quantize = quantizer(isa, kind);
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

void matmul_shared_with(const IsaKernels& isa, const MatmulOutput* outputs, size_t n_outputs, const float* x,
                        int64_t n_tokens, ThreadPool& pool) {
    std::vector<GemmFn> gemms;
    for (size_t i = 0; i < n_outputs; ++i) gemms.push_back(checked_gemm(isa, *outputs[i].w));
    if (n_tokens <= 0) return;

    // Outputs whose matrices read the activations in the same layout (same
    // columns and quantization) share one quantized copy and one parallel
    // region; a different one starts a group of its own.
    std::vector<bool> done(n_outputs, false);
    for (size_t first = 0; first < n_outputs; ++first) {
        if (done[first]) continue;
        const QuantMatrix& w0 = *outputs[first].w;
        std::vector<size_t> group;
        for (size_t i = first; i < n_outputs; ++i) {
            const QuantMatrix& w = *outputs[i].w;
            if (done[i] || w.cols != w0.cols || activation_kind(isa, w.type) != activation_kind(isa, w0.type)) continue;
            done[i] = true;
            if (w.rows > 0) group.push_back(i);
        }
        if (group.empty()) continue;
        size_t x_stride;
        const uint8_t* xq = prepare_activations(isa, w0, x, n_tokens, &x_stride, &pool);

        // Ranges of whole row units over all the group's rows, or of tokens
        // when there are too few rows to share (ThreadPool::parallel_for).
        // unit_end[j]: the group's first j + 1 matrices' row units.
        std::vector<int64_t> unit_end;
        for (size_t i : group) {
            const int64_t units = (outputs[i].w->rows + kRowUnit - 1) / kRowUnit;
            unit_end.push_back((unit_end.empty() ? 0 : unit_end.back()) + units);
        }
        const bool split_rows = unit_end.back() >= pool.size() || n_tokens < pool.size();
        pool.parallel_for(split_rows ? unit_end.back() : n_tokens, [&](int64_t begin, int64_t end) {
            for (size_t j = 0; j < group.size(); ++j) {
                const QuantMatrix& w = *outputs[group[j]].w;
                GemmArgs g{w.data, w.row_bytes, w.cols, 0, w.rows, xq, x_stride, 0, n_tokens, outputs[group[j]].y, w.rows};
                if (split_rows) {
                    const int64_t first_unit = j == 0 ? 0 : unit_end[j - 1];
                    g.row_begin = std::min(w.rows, (std::max(begin, first_unit) - first_unit) * kRowUnit);
                    g.row_end = std::min(w.rows, (std::min(end, unit_end[j]) - first_unit) * kRowUnit);
                } else {
                    g.tok_begin = begin;
                    g.tok_end = end;
                }
                if (g.row_begin < g.row_end && g.tok_begin < g.tok_end) gemm_in_chunks(gemms[group[j]], g);
            }
        });
    }
}

void matmul_with(const IsaKernels& isa, const QuantMatrix& w, const float* x, int64_t n_tokens, float* y,
                 ThreadPool& pool) {
    const MatmulOutput output{&w, y};
    matmul_shared_with(isa, &output, 1, x, n_tokens, pool);
}

void matmul(const QuantMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
    matmul_with(active_kernels(), w, x, n_tokens, y, pool);
}

void matmul_shared(std::initializer_list<MatmulOutput> outputs, const float* x, int64_t n_tokens, ThreadPool& pool) {
    matmul_shared_with(active_kernels(), outputs.begin(), outputs.size(), x, n_tokens, pool);
}

void matmul_grouped(const std::vector<GroupedMatmul>& jobs, ThreadPool& pool) {
    const IsaKernels& isa = active_kernels();
    const size_t n = jobs.size();
    std::vector<GemmFn> gemms;
    std::vector<ActKind> kinds;
    std::vector<size_t> strides, offsets(n, SIZE_MAX);  // offsets: into one scratch buffer; SIZE_MAX: x as it is
    std::vector<size_t> quantized;                       // the jobs whose x is quantized here, once each
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) {
        const QuantMatrix& w = *jobs[i].w;
        gemms.push_back(checked_gemm(isa, w));
        kinds.push_back(activation_kind(isa, w.type));
        strides.push_back(act_row_bytes(kinds[i], w.cols));
        if (kinds[i] == ActKind::F32 || jobs[i].n_tokens <= 0) continue;
        for (size_t j = 0; j < i && offsets[i] == SIZE_MAX; ++j)
            if (jobs[j].x == jobs[i].x && jobs[j].n_tokens == jobs[i].n_tokens && kinds[j] == kinds[i] &&
                jobs[j].w->cols == w.cols)
                offsets[i] = offsets[j];
        if (offsets[i] != SIZE_MAX) continue;
        offsets[i] = total;  // each job's rows start 64-byte aligned, as in the scratch buffer of one matmul
        total += (strides[i] * static_cast<size_t>(jobs[i].n_tokens) + 63) / 64 * 64;
        quantized.push_back(i);
    }
    uint8_t* buffer = scratch(total);
    // Quantize: one parallel region over every quantized job's tokens.
    std::vector<int64_t> token_end;
    for (size_t i : quantized) token_end.push_back((token_end.empty() ? 0 : token_end.back()) + jobs[i].n_tokens);
    if (!quantized.empty())
        pool.parallel_for(token_end.back(), [&](int64_t begin, int64_t end) {
            for (size_t q = 0; q < quantized.size(); ++q) {
                const size_t i = quantized[q];
                const int64_t first = q == 0 ? 0 : token_end[q - 1];
                const QuantizeFn quantize = quantizer(isa, kinds[i]);
                const int64_t cols = jobs[i].w->cols;
                for (int64_t t = std::max(begin, first); t < std::min(end, token_end[q]); ++t)
                    quantize(jobs[i].x + (t - first) * cols, cols, buffer + offsets[i] + (t - first) * strides[i]);
            }
        });
    // Multiply: one parallel region over every job's row units.
    std::vector<int64_t> unit_end;
    for (const GroupedMatmul& job : jobs)
        unit_end.push_back((unit_end.empty() ? 0 : unit_end.back()) +
                           (job.n_tokens > 0 ? (job.w->rows + kRowUnit - 1) / kRowUnit : 0));
    if (unit_end.empty() || unit_end.back() == 0) return;
    pool.parallel_for(unit_end.back(), [&](int64_t begin, int64_t end) {
        for (size_t j = 0; j < n; ++j) {
            const int64_t first_unit = j == 0 ? 0 : unit_end[j - 1];
            if (unit_end[j] <= begin || first_unit >= end) continue;
            const QuantMatrix& w = *jobs[j].w;
            const uint8_t* xq = offsets[j] == SIZE_MAX ? reinterpret_cast<const uint8_t*>(jobs[j].x) : buffer + offsets[j];
            GemmArgs g{w.data, w.row_bytes, w.cols, 0, w.rows, xq, strides[j], 0, jobs[j].n_tokens, jobs[j].y, w.rows};
            g.row_begin = std::min(w.rows, (std::max(begin, first_unit) - first_unit) * kRowUnit);
            g.row_end = std::min(w.rows, (std::min(end, unit_end[j]) - first_unit) * kRowUnit);
            if (g.row_begin < g.row_end) gemm_in_chunks(gemms[j], g);
        }
    });
}

void matvec_rows(const QuantMatrix& w, const float* x, int64_t row_begin, int64_t row_end, float* y) {
    const IsaKernels& isa = active_kernels();
    if (w.layout != WeightLayout::kRows) throw_invalid_argument("matvec_rows: the matrix is not in the row layout");
    const GemmFn gemm = checked_gemm(isa, w);
    if (row_begin >= row_end) return;
    size_t x_stride;
    const uint8_t* xq = prepare_activations(isa, w, x, 1, &x_stride, nullptr);
    gemm({w.data + row_begin * w.row_bytes, w.row_bytes, w.cols, 0, row_end - row_begin, xq, x_stride, 0, 1, y,
          row_end - row_begin});
}

}  // namespace vllm::kernels
