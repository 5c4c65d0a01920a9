// CPU kernels the model runner calls. Each is implemented once per
// instruction set (kernels/cpu/*_scalar.cpp, *_avx2.cpp, *_avx512.cpp,
// *_neon.cpp) and chosen at run time by dispatch.cpp, so one build runs on
// any machine of its architecture.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <initializer_list>
#include <vector>

#include "dtype/ggml_type.h"
#include "util/thread_pool.h"

namespace vllm::kernels {

// How a matrix's bytes are ordered. kRows: as the file stores them, row
// after row. kInterleaved16: groups of 16 rows interleaved block by block
// for the SIMD matmuls (interleave.h), made by prepare_for_matmul().
enum class WeightLayout { kRows, kInterleaved16 };

// How an interleaved Q8_0 matrix holds its weights: plus 128 as u8, or as
// the file's s8. Each kernel build reads one (IsaKernels::q8_0_bytes).
enum class Q8_0Bytes { kPlus128, kSigned };

// A weight matrix: `rows` rows of `cols` elements, each row a run of
// quantization blocks (`row_bytes` bytes; 16 rows take 16 * row_bytes in
// either layout). Never expanded to float in memory.
struct QuantMatrix {
    GgmlType type = GgmlType::F32;
    const uint8_t* data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    size_t row_bytes = 0;
    WeightLayout layout = WeightLayout::kRows;
    Q8_0Bytes q8_0_bytes = Q8_0Bytes::kPlus128;  // interleaved Q8_0 only
};

// `w` (row layout) as the active build's fastest matmul reads it: for
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K (AVX2, AVX-512, NEON
// with SDOT), and BF16 and F16 with an even column count (AVX2, AVX-512),
// with a multiple of 16 rows, a copy in
// the interleaved layout written into `storage`, which the returned matrix
// points into (keep the vector alive; moving it keeps its buffer).
// Otherwise `w` itself, and `storage` is left alone.
QuantMatrix prepare_for_matmul(const QuantMatrix& w, std::vector<uint8_t>& storage);

// prepare_for_matmul's decision without the copy: `w` with the layout (and
// Q8_0 bytes) the active build reads it in; data still w's rows.
QuantMatrix matmul_layout(const QuantMatrix& w);

// Writes `w`'s rows (row layout) in `form`'s layout (matmul_layout of the
// whole matrix) into `out`: zeroed, 64-byte aligned, w.rows * w.row_bytes
// bytes. Either layout keeps a 16-row group's byte offset, so a matrix can
// be written as bands of whole groups, each on its own thread.
void write_matmul_layout(const QuantMatrix& w, const QuantMatrix& form, uint8_t* out);

// y[t * w.rows + r] = sum_c x[t * w.cols + c] * W[r, c] for every token t in
// [0, n_tokens) and row r, parallelised over `pool`. Quantized weights may
// quantize the activations to 8 bits per block, and BF16 weights round them
// to bf16 on CPUs with AVX-512 BF16 (as llama.cpp does).
void matmul(const QuantMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

// One matmul of matmul_shared(): y = W x for W = *w.
struct MatmulOutput {
    const QuantMatrix* w;
    float* y;
};

// matmul() of several matrices by the same x (a layer's q/k/v, gate/up):
// x is quantized once and all the matrices' rows are shared out in one
// parallel region. Matrices that read x differently (other columns or
// quantization) are grouped apart. Each y is what matmul() gives.
void matmul_shared(std::initializer_list<MatmulOutput> outputs, const float* x, int64_t n_tokens, ThreadPool& pool);

// One matmul of matmul_grouped(): y = W x for n_tokens rows of x, W = *w.
struct GroupedMatmul {
    const QuantMatrix* w;
    const float* x;
    int64_t n_tokens;
    float* y;
};

// Several matmuls, each with its own activations (a mixture of experts:
// each expert's gathered tokens, llama.cpp's mul_mat_id), in one parallel
// region over all their rows. Jobs with the same x, column count and
// activation quantization quantize x once. Each y is what matmul() gives.
void matmul_grouped(const std::vector<GroupedMatmul>& jobs, ThreadPool& pool);

// Rows [row_begin, row_end) only, for one token, on the calling thread:
// y[r - row_begin] = dot(W[r], x). For callers that split work themselves.
// Row layout only.
void matvec_rows(const QuantMatrix& w, const float* x, int64_t row_begin, int64_t row_end, float* y);

// Expands n elements (a multiple of the type's block size) of one row.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

// Dense float helpers for attention and norms.
float dot_f32(const float* a, const float* b, int64_t n);
void axpy_f32(float a, const float* x, float* y, int64_t n);  // y += a * x

// The instruction set in use: "amx", "avx512", "avx2", "neon" or "scalar".
// VLLM_CPP_ISA=scalar|avx2|avx512|amx|neon forces a lower one (for tests);
// a value the CPU cannot run is ignored.
const char* active_isa();

// Makes `name` the process's instruction set (an engine's `isa` option):
// chosen now when no kernel has run yet, else it must be the one in use.
// The choice is process-wide because weights are laid out for it at load.
// INVALID_ARGUMENT when `name` is not a build this CPU runs, or when the
// process already uses another one (chosen by an earlier engine, first use
// or VLLM_CPP_ISA).
void require_isa(const std::string& name);

}  // namespace vllm::kernels
