// Tests of the CPU kernels (kernels/cpu): dequantization against gguf-py's
// reference values, every SIMD build on this machine against the scalar
// build, and the scalar build against float math.
//
//   test_kernels           run the tests; prints "N passed, M failed"
//   test_kernels --bench [threads [type]]
//                          GFLOP/s of the SmolLM2-135M matmul shapes (and
//                          a few other types) with 2 threads by default,
//                          for each SIMD build this machine runs (only the
//                          cases of one weight type if named, e.g. BF16);
//                          with 1 thread, per second of CPU time
//   test_kernels --bench-small-m [threads]
//                          F16 and BF16 matmuls of 1-16 tokens over
//                          matrices larger than the caches (as a decode or a
//                          verification of drafts meets them): CPU seconds
//                          per call as a multiple of the 1-token call's
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "data/kernel_cases.h"
#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/interleave.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/quant_blocks.h"
#include "check.h"

using namespace vllm;
using namespace vllm::kernels;

namespace {

const GgmlType kTypes[] = {GgmlType::F32,    GgmlType::F16,    GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                           GgmlType::Q5_0,   GgmlType::Q5_1,   GgmlType::Q8_0, GgmlType::IQ4_NL, GgmlType::IQ4_XS,
                           GgmlType::Q2_K,   GgmlType::Q3_K,   GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                           GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
                           GgmlType::IQ1_S,  GgmlType::IQ1_M,  GgmlType::TQ1_0, GgmlType::TQ2_0, GgmlType::MXFP4};

std::string name_of(GgmlType t) { return ggml_type_name(static_cast<uint32_t>(t)); }

std::vector<const IsaKernels*> available_isas() {
    std::vector<const IsaKernels*> out;
    for (const char* name : {"scalar", "avx2", "avx512", "amx", "neon"})
        if (const IsaKernels* k = find_isa(name)) out.push_back(k);
    return out;
}

// --- random weights -------------------------------------------------------------

// A finite fp16 of magnitude in [2^lo, 2^hi), random sign when `sign`.
uint16_t random_half(std::mt19937& rng, int lo, int hi, bool sign) {
    const uint16_t exponent = static_cast<uint16_t>(15 + lo + static_cast<int>(rng() % (hi - lo)));
    const uint16_t mantissa = static_cast<uint16_t>(rng() & 0x3ff);
    const uint16_t s = sign && (rng() & 1) ? 0x8000 : 0;
    return static_cast<uint16_t>(s | (exponent << 10) | mantissa);
}

void put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// Random bytes in the layout of `type`, with the scale fields set to
// moderate finite values (so no inf / nan, and dot products of order 1).
std::vector<uint8_t> random_matrix(GgmlType type, int64_t rows, int64_t cols, std::mt19937& rng) {
    const size_t row_bytes = ggml_row_bytes(type, cols);
    std::vector<uint8_t> m(row_bytes * rows);
    for (auto& b : m) b = static_cast<uint8_t>(rng());
    std::normal_distribution<float> normal(0.0f, 0.5f);
    const int64_t n = rows * cols;
    switch (type) {
        case GgmlType::F32:
            for (int64_t i = 0; i < n; ++i) {
                const float v = normal(rng);
                std::memcpy(&m[4 * i], &v, 4);
            }
            break;
        case GgmlType::F16:
            for (int64_t i = 0; i < n; ++i) put16(&m[2 * i], random_half(rng, -12, 1, true));  // includes subnormals
            break;
        case GgmlType::BF16:
            for (int64_t i = 0; i < n; ++i) {
                const float v = normal(rng);
                uint32_t bits;
                std::memcpy(&bits, &v, 4);
                put16(&m[2 * i], static_cast<uint16_t>(bits >> 16));
            }
            break;
        default: {
            // Quantized: each block's fp16 scales at their offset, of a
            // magnitude that keeps the weights of order 0.1.
            struct ScaleField {
                size_t offset;
                int lo, hi;  // exponent range
                bool sign;
            };
            std::vector<ScaleField> fields;
            switch (type) {
                case GgmlType::Q4_0:
                case GgmlType::Q8_0: fields = {{0, -8, -4, false}}; break;
                case GgmlType::Q4_1: fields = {{0, -8, -4, false}, {2, -5, -1, true}}; break;
                case GgmlType::Q5_0: fields = {{0, -9, -5, false}}; break;
                case GgmlType::Q5_1: fields = {{0, -9, -5, false}, {2, -5, -1, true}}; break;
                case GgmlType::IQ4_NL: fields = {{0, -12, -8, false}}; break;
                case GgmlType::IQ4_XS: fields = {{0, -15, -11, false}}; break;
                case GgmlType::Q2_K: fields = {{80, -9, -5, false}, {82, -9, -5, false}}; break;
                case GgmlType::Q3_K: fields = {{108, -12, -8, false}}; break;
                case GgmlType::Q4_K:
                case GgmlType::Q5_K: fields = {{0, -10, -6, false}, {2, -10, -6, false}}; break;
                case GgmlType::Q6_K: fields = {{208, -12, -8, false}}; break;
                case GgmlType::IQ2_XXS:
                case GgmlType::IQ2_XS:
                case GgmlType::IQ2_S:
                case GgmlType::IQ3_XXS:
                case GgmlType::IQ3_S:
                case GgmlType::IQ1_S: fields = {{0, -12, -8, false}}; break;
                case GgmlType::TQ1_0: fields = {{52, -6, -2, false}}; break;
                case GgmlType::TQ2_0: fields = {{64, -6, -2, false}}; break;
                default: break;
            }
            const size_t block = ggml_type_info(static_cast<uint32_t>(type))->block_bytes;
            for (size_t off = 0; off < m.size(); off += block) {
                for (const ScaleField& f : fields) put16(&m[off + f.offset], random_half(rng, f.lo, f.hi, f.sign));
                if (type == GgmlType::IQ1_M) {
                    // d's four nibbles in the top bits of the four scale words (bytes 48..55).
                    const uint16_t d = random_half(rng, -12, -8, false);
                    for (int i = 0; i < 4; ++i) {
                        uint16_t word;
                        std::memcpy(&word, &m[off + 48 + 2 * i], 2);
                        put16(&m[off + 48 + 2 * i], static_cast<uint16_t>((word & 0x0fff) | (((d >> (4 * i)) & 0xf) << 12)));
                    }
                }
                if (type == GgmlType::MXFP4) m[off] = static_cast<uint8_t>(118 + rng() % 8);  // 2^-10 .. 2^-3
            }
            break;
        }
    }
    return m;
}

std::vector<float> random_activations(int64_t n, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(n);
    for (auto& v : x) v = normal(rng);
    // An outlier channel, as real activations have, so block scales differ.
    for (int64_t i = 5; i < n; i += 97) x[i] *= 20.0f;
    return x;
}

QuantMatrix matrix_of(GgmlType type, const std::vector<uint8_t>& data, int64_t rows, int64_t cols) {
    return {type, data.data(), rows, cols, ggml_row_bytes(type, cols)};
}

// --- dequantization --------------------------------------------------------------

void test_dequantize() {
    for (const auto& c : kernel_cases::kCases) {
        const GgmlType type = static_cast<GgmlType>(c.type);
        std::vector<float> out(kernel_cases::kElements);
        dequantize_row(type, c.data, out.data(), kernel_cases::kElements);
        int mismatches = 0;
        for (int64_t i = 0; i < kernel_cases::kElements; ++i) {
            float want;
            std::memcpy(&want, &c.expected[i], 4);
            // Same arithmetic as gguf-py, so equal up to FMA contraction
            // on targets that contract.
            if (!(std::fabs(out[i] - want) <= 1e-6f * std::max(1.0f, std::fabs(want)))) ++mismatches;
        }
        check(mismatches == 0, "dequantize " + name_of(type) + ": " + std::to_string(mismatches) + " mismatches");
        check(ggml_row_bytes(type, kernel_cases::kElements) == c.bytes, "row bytes of " + name_of(type));
    }
}

// --- activation quantizers ---------------------------------------------------------

void test_quantizers() {
    std::mt19937 rng(7);
    const IsaKernels& ref = scalar_kernels();
    for (const IsaKernels* isa : available_isas()) {
        for (int64_t n : {32, 96, 512, 1536}) {
            const std::vector<float> x = random_activations(n, rng);
            for (ActKind kind : {ActKind::Q8x32, ActKind::Q8x256}) {
                if (kind == ActKind::Q8x256 && n % 256) continue;
                const size_t bytes = act_row_bytes(kind, n);
                std::vector<uint8_t> want(bytes, 0xab), got(bytes, 0xab);
                (kind == ActKind::Q8x32 ? ref.quantize_q8x32 : ref.quantize_q8x256)(x.data(), n, want.data());
                (kind == ActKind::Q8x32 ? isa->quantize_q8x32 : isa->quantize_q8x256)(x.data(), n, got.data());
                check(want == got, std::string("quantizer ") + isa->name + (kind == ActKind::Q8x32 ? " q8x32 n=" : " q8x256 n=") +
                                       std::to_string(n) + " differs from scalar");
            }
        }
    }
}

// The BF16 activations of the builds that have them: each element rounded
// to the nearest bf16 (ties to even), pads zero.
void test_bf16_rounding() {
    std::mt19937 rng(9);
    for (const IsaKernels* isa : available_isas()) {
        if (isa->quantize_bf16 == nullptr) continue;
        for (int64_t n : {7, 32, 33, 576}) {
            std::vector<float> x = random_activations(n, rng);
            x[0] = 1.0f + std::ldexp(1.0f, -8);  // a tie: rounds to the even 1.0
            std::vector<uint8_t> out(act_row_bytes(ActKind::BF16, n), 0xab);
            isa->quantize_bf16(x.data(), n, out.data());
            const auto* got = reinterpret_cast<const uint16_t*>(out.data());
            int bad = 0;
            for (int64_t i = 0; i < elements_padded32(n); ++i) {
                uint32_t bits = 0;
                if (i < n) std::memcpy(&bits, &x[i], 4);
                const uint16_t want = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
                bad += got[i] != want;
            }
            check(bad == 0 && got[0] == 0x3f80, std::string("bf16 rounding ") + isa->name + " n=" + std::to_string(n) +
                                                   ": " + std::to_string(bad) + " bad elements");
        }
    }
}

// --- matmul ---------------------------------------------------------------------------

struct Shape {
    int64_t rows, cols, tokens;
};

// The float-math result and the bound the kernels must meet, per output.
//
// Float types: the only error is float summation, bounded by
// n * 2^-24 * sum|w x| (recursive summation; pairwise orders do better).
// Quantized types also round each activation to its block's 8-bit grid,
// an error of at most d/2 per element (d = that block's amax / 127), so
// |y - y_ref| <= sum_i |w_i| d_i / 2 plus the summation term.
struct Reference {
    std::vector<double> y;
    std::vector<double> bound;      // |scalar build - y| must not exceed this
    std::vector<double> summation;  // the float summation part of it
    std::vector<double> magnitude;  // sum_i |w_i x_i|
};

Reference reference(GgmlType type, const std::vector<uint8_t>& w, const Shape& s, const std::vector<float>& x) {
    const size_t row_bytes = ggml_row_bytes(type, s.cols);
    const ActKind kind = act_kind(type);
    const int64_t block = kind == ActKind::Q8x32 ? 32 : kind == ActKind::Q8x256 ? 256 : 0;
    std::vector<float> wrow(s.cols), half_step(s.cols, 0.0f);
    Reference ref;
    ref.y.resize(s.rows * s.tokens);
    ref.bound.resize(s.rows * s.tokens);
    ref.summation.resize(s.rows * s.tokens);
    ref.magnitude.resize(s.rows * s.tokens);
    for (int64_t t = 0; t < s.tokens; ++t) {
        const float* xt = &x[t * s.cols];
        for (int64_t b = 0; block && b < s.cols; b += block) {
            float amax = 0.0f;
            for (int64_t i = b; i < b + block; ++i) amax = std::max(amax, std::fabs(xt[i]));
            for (int64_t i = b; i < b + block; ++i) half_step[i] = amax / 127.0f / 2.0f;
        }
        for (int64_t r = 0; r < s.rows; ++r) {
            dequantize_row(type, w.data() + r * row_bytes, wrow.data(), s.cols);
            double sum = 0.0, abs_sum = 0.0, quant = 0.0;
            for (int64_t i = 0; i < s.cols; ++i) {
                sum += static_cast<double>(wrow[i]) * xt[i];
                abs_sum += std::fabs(static_cast<double>(wrow[i]) * xt[i]);
                quant += std::fabs(wrow[i]) * static_cast<double>(half_step[i]);
            }
            const int64_t i = t * s.rows + r;
            ref.y[i] = sum;
            ref.magnitude[i] = abs_sum;
            ref.summation[i] = (s.cols + 8) * std::ldexp(abs_sum + quant, -24) + 1e-6;
            ref.bound[i] = quant * 1.0001 + ref.summation[i];
        }
    }
    return ref;
}

void test_matmul() {
    std::mt19937 rng(42);
    ThreadPool pool(2);
    const IsaKernels& scalar = scalar_kernels();
    for (GgmlType type : kTypes) {
        const int64_t blk = ggml_type_info(static_cast<uint32_t>(type))->block_elements;
        const bool is_float = blk == 1;
        // Small and odd shapes: partial tiles, an odd count of 32-blocks,
        // float rows that are not a whole number of vectors, matrices too
        // short to split by rows, and rows wide enough that 70 tokens take
        // several activation chunks.
        const int64_t c_small = is_float ? 7 : blk;
        const int64_t c_odd = is_float ? 33 : 3 * blk;
        const int64_t c_wide = is_float ? 576 : blk == 32 ? 576 : 1536;
        const Shape shapes[] = {{1, c_small, 1}, {3, c_odd, 3},   {17, c_odd, 17},  {5, c_wide, 1},
                                {64, c_wide, 70}, {3, c_small, 17}, {37, c_odd, 5}, {10, 4096, 70}};
        for (const Shape& s : shapes) {
            const std::string what = name_of(type) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols) +
                                     " tokens=" + std::to_string(s.tokens);
            const std::vector<uint8_t> w = random_matrix(type, s.rows, s.cols, rng);
            const std::vector<float> x = random_activations(s.cols * s.tokens, rng);
            const QuantMatrix m = matrix_of(type, w, s.rows, s.cols);

            const Reference ref = reference(type, w, s, x);
            std::vector<float> want(s.rows * s.tokens);
            matmul_with(scalar, m, x.data(), s.tokens, want.data(), pool);
            int bad = 0;
            for (size_t i = 0; i < want.size(); ++i) bad += !(std::fabs(want[i] - ref.y[i]) <= ref.bound[i]);
            check(bad == 0, "scalar vs float math, " + what + ": " + std::to_string(bad) + " outside the bound");

            // The SIMD builds quantize identically and differ from the
            // scalar one only in float summation order, or read the
            // activations rounded to bf16 (each x off by at most 2^-9 |x|).
            for (const IsaKernels* isa : available_isas()) {
                if (isa == &scalar) continue;
                const bool bf16 = activation_kind(*isa, type) == ActKind::BF16;
                std::vector<float> got(want.size(), NAN);
                matmul_with(*isa, m, x.data(), s.tokens, got.data(), pool);
                int diff = 0;
                for (size_t i = 0; i < want.size(); ++i) {
                    const double bound = 2.0 * ref.summation[i] + (bf16 ? std::ldexp(ref.magnitude[i], -8) : 0.0);
                    diff += !(std::fabs(got[i] - want[i]) <= bound);
                }
                check(diff == 0, std::string(isa->name) + " vs scalar, " + what + ": " + std::to_string(diff) + " differ");
                // Batch invariance: each token alone gets its batched result bit for bit.
                int varied = 0;
                for (int64_t t = 0; t < s.tokens && s.tokens > 1; ++t) {
                    std::vector<float> alone(s.rows);
                    matmul_with(*isa, m, &x[t * s.cols], 1, alone.data(), pool);
                    varied += !std::equal(alone.begin(), alone.end(), got.begin() + t * s.rows);
                }
                check(varied == 0, std::string(isa->name) + " batch invariance, " + what + ": " + std::to_string(varied) +
                                       " tokens differ alone");
            }
        }
    }
}

// The interleaved layout (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, BF16, F16): every build with a
// kernel for it agrees with the scalar row-layout matmul, and a token's
// result is bit-identical whether it is computed alone or in a batch.
void test_interleaved() {
    std::mt19937 rng(7);
    ThreadPool pool(2);
    const Shape shapes[] = {{16, 32, 1}, {16, 96, 3}, {32, 576, 17}, {64, 1536, 70}, {192, 576, 9}, {48, 96, 33}};
    // The float types also take column counts that are no multiple of 32.
    const Shape float_shapes[] = {{16, 2, 3}, {16, 34, 9}, {32, 50, 17}, {48, 1538, 5}};
    // The K-quants take whole 256-element super-blocks.
    const Shape super_block_shapes[] = {{16, 256, 1}, {16, 512, 3}, {32, 1536, 17}, {48, 768, 33}, {64, 256, 9}};
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q4_K,
                          GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::BF16, GgmlType::F16}) {
        const bool k_quant = type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K;
        std::vector<Shape> cases(std::begin(shapes), std::end(shapes));
        if (k_quant) cases.assign(std::begin(super_block_shapes), std::end(super_block_shapes));
        if (type == GgmlType::BF16 || type == GgmlType::F16) cases.insert(cases.end(), std::begin(float_shapes), std::end(float_shapes));
        for (const Shape& s : cases) {
            const std::string what = name_of(type) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols) +
                                     " tokens=" + std::to_string(s.tokens);
            const std::vector<uint8_t> w = random_matrix(type, s.rows, s.cols, rng);
            const std::vector<float> x = random_activations(s.cols * s.tokens, rng);
            const QuantMatrix m = matrix_of(type, w, s.rows, s.cols);
            const Reference ref = reference(type, w, s, x);
            std::vector<float> want(s.rows * s.tokens);
            matmul_with(scalar_kernels(), m, x.data(), s.tokens, want.data(), pool);

            for (const IsaKernels* isa : available_isas()) {
                if (isa->gemm_interleaved[kernel_slot(type)] == nullptr) continue;
                std::vector<uint8_t> storage;
                const QuantMatrix packed = interleave(m, storage, isa->q8_0_bytes);
                check(packed.layout == WeightLayout::kInterleaved16 && reinterpret_cast<uintptr_t>(packed.data) % 64 == 0,
                      "interleave gives an aligned interleaved matrix, " + what);
                // The model writes its copies band by band (weight_preparation.cpp):
                // 16-row bands into zeroed memory give interleave()'s bytes.
                if (isa == &active_kernels()) {
                    const QuantMatrix form = matmul_layout(m);
                    check(form.layout == WeightLayout::kInterleaved16 && form.q8_0_bytes == packed.q8_0_bytes,
                          "matmul_layout picks the interleaved form, " + what);
                    std::vector<uint8_t> banded(s.rows * m.row_bytes, 0);
                    for (int64_t row = 0; row < s.rows; row += kInterleaveRows) {
                        QuantMatrix band = m;
                        band.data = m.data + row * m.row_bytes;
                        band.rows = kInterleaveRows;
                        write_matmul_layout(band, form, banded.data() + row * m.row_bytes);
                    }
                    check(std::equal(banded.begin(), banded.end(), packed.data),
                          "bands written by write_matmul_layout equal interleave(), " + what);
                }
                const bool bf16 = activation_kind(*isa, type) == ActKind::BF16;  // as in test_matmul
                std::vector<float> got(want.size(), NAN);
                matmul_with(*isa, packed, x.data(), s.tokens, got.data(), pool);
                int diff = 0;
                for (size_t i = 0; i < want.size(); ++i) {
                    const double bound = 2.0 * ref.summation[i] + (bf16 ? std::ldexp(ref.magnitude[i], -8) : 0.0);
                    diff += !(std::fabs(got[i] - want[i]) <= bound);
                }
                check(diff == 0, std::string(isa->name) + " interleaved vs scalar, " + what + ": " + std::to_string(diff) +
                                     " differ");
                int varied = 0;
                for (int64_t t = 0; t < s.tokens; ++t) {
                    std::vector<float> alone(s.rows);
                    matmul_with(*isa, packed, &x[t * s.cols], 1, alone.data(), pool);
                    varied += !std::equal(alone.begin(), alone.end(), got.begin() + t * s.rows);
                }
                check(varied == 0, std::string(isa->name) + " interleaved batch invariance, " + what);
            }
        }
    }
    // Refusals: a build without the kernel, matvec_rows, and matrices
    // that have no interleaved form.
    const std::vector<uint8_t> w = random_matrix(GgmlType::Q4_1, 16, 64, rng);
    std::vector<uint8_t> storage;
    const QuantMatrix packed = interleave(matrix_of(GgmlType::Q4_1, w, 16, 64), storage, Q8_0Bytes::kPlus128);
    std::vector<float> x(64, 1.0f), y(16);
    const auto throws = [](const std::function<void()>& fn) {
        try {
            fn();
        } catch (const std::exception&) {
            return true;
        }
        return false;
    };
    check(throws([&] { matmul_with(scalar_kernels(), packed, x.data(), 1, y.data(), pool); }),
          "the scalar build refuses an interleaved matrix");
    check(throws([&] { matvec_rows(packed, x.data(), 0, 16, y.data()); }), "matvec_rows refuses an interleaved matrix");
    // Interleaved Q8_0 holds its weights in one build's form; another build refuses it.
    const std::vector<uint8_t> w8 = random_matrix(GgmlType::Q8_0, 16, 64, rng);
    for (const IsaKernels* isa : available_isas()) {
        if (isa->gemm_interleaved[kSlotQ8_0] == nullptr) continue;
        const Q8_0Bytes other = isa->q8_0_bytes == Q8_0Bytes::kSigned ? Q8_0Bytes::kPlus128 : Q8_0Bytes::kSigned;
        std::vector<uint8_t> other_storage;
        const QuantMatrix foreign = interleave(matrix_of(GgmlType::Q8_0, w8, 16, 64), other_storage, other);
        check(throws([&] { matmul_with(*isa, foreign, x.data(), 1, y.data(), pool); }),
              std::string(isa->name) + " refuses interleaved Q8_0 in the other build's form");
    }
    check(!can_interleave(matrix_of(GgmlType::Q4_1, w, 8, 128)), "8 rows have no interleaved form");
    check(!can_interleave(matrix_of(GgmlType::Q3_K, random_matrix(GgmlType::Q3_K, 16, 256, rng), 16, 256)),
          "Q3_K has no interleaved form");
    check(!can_interleave(matrix_of(GgmlType::Q6_K, random_matrix(GgmlType::Q6_K, 32, 128, rng), 32, 128)),
          "a Q6_K matrix of 128 columns has no interleaved form");
    check(throws([&] { interleave(matrix_of(GgmlType::Q4_1, w, 8, 128), storage, Q8_0Bytes::kPlus128); }),
          "interleave refuses 8 rows");
    const std::vector<uint8_t> wf = random_matrix(GgmlType::BF16, 24, 33, rng);
    check(!can_interleave(matrix_of(GgmlType::BF16, wf, 24, 32)), "24 BF16 rows have no interleaved form");
    check(!can_interleave(matrix_of(GgmlType::BF16, wf, 16, 33)), "33 BF16 columns have no interleaved form");
    check(!can_interleave(matrix_of(GgmlType::F16, wf, 16, 33)), "33 F16 columns have no interleaved form");
    check(!can_interleave(matrix_of(GgmlType::F32, random_matrix(GgmlType::F32, 16, 32, rng), 16, 32)),
          "F32 has no interleaved form");
    check(throws([&] { interleave(matrix_of(GgmlType::BF16, wf, 16, 33), storage, Q8_0Bytes::kPlus128); }),
          "interleave refuses odd columns");
}

// A matrix whose every weight is its format's largest in magnitude
// (nibbles 15, Q5's 31, Q6_K's 63, Q8_0's -128) and whose integer scales
// are too (the K-quants' 6-bit 63, Q6_K's -128), with finite fp16 scales:
// the integer sums of the interleaved kernels reach their bounds (AVX2
// sums maddubs pairs in int16 before widening them).
std::vector<uint8_t> extreme_matrix(GgmlType type, int64_t rows, int64_t cols) {
    std::vector<uint8_t> m(ggml_row_bytes(type, cols) * rows, type == GgmlType::Q8_0 ? 0x80 : 0xff);
    const size_t block = ggml_type_info(static_cast<uint32_t>(type))->block_bytes;
    const uint16_t scale = 0x2000;  // 2^-7
    for (size_t off = 0; off < m.size(); off += block) {
        switch (type) {
            case GgmlType::Q4_1:
            case GgmlType::Q5_1:
            case GgmlType::Q4_K:
            case GgmlType::Q5_K: put16(&m[off + 2], scale); [[fallthrough]];  // m or dmin, then d
            case GgmlType::Q4_0:
            case GgmlType::Q5_0:
            case GgmlType::Q8_0: put16(&m[off], scale); break;
            case GgmlType::Q6_K:
                std::memset(&m[off + 192], 0x80, 16);  // the 16 scales
                put16(&m[off + 208], scale);
                break;
            default: break;
        }
    }
    return m;
}

// The interleaved kernels on extreme_matrix with activations all +1 or all
// -1 (every 8-bit activation +-127): no integer sum overflows.
void test_interleaved_extremes() {
    ThreadPool pool(2);
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q4_K,
                          GgmlType::Q5_K, GgmlType::Q6_K}) {
        const Shape s{32, 1536, 7};
        const std::vector<uint8_t> w = extreme_matrix(type, s.rows, s.cols);
        std::vector<float> x(s.cols * s.tokens);
        for (int64_t t = 0; t < s.tokens; ++t) std::fill_n(&x[t * s.cols], s.cols, t % 2 ? -1.0f : 1.0f);
        const QuantMatrix m = matrix_of(type, w, s.rows, s.cols);
        const Reference ref = reference(type, w, s, x);
        std::vector<float> want(s.rows * s.tokens);
        matmul_with(scalar_kernels(), m, x.data(), s.tokens, want.data(), pool);
        for (const IsaKernels* isa : available_isas()) {
            if (isa->gemm_interleaved[kernel_slot(type)] == nullptr) continue;
            std::vector<uint8_t> storage;
            const QuantMatrix packed = interleave(m, storage, isa->q8_0_bytes);
            std::vector<float> got(want.size(), NAN);
            matmul_with(*isa, packed, x.data(), s.tokens, got.data(), pool);
            int diff = 0;
            for (size_t i = 0; i < want.size(); ++i) diff += !(std::fabs(got[i] - want[i]) <= 2.0 * ref.summation[i]);
            check(diff == 0, std::string(isa->name) + " interleaved " + name_of(type) + " at the integer sums' bounds: " +
                                 std::to_string(diff) + " differ");
        }
    }
}

// matmul_shared gives each matrix exactly what matmul gives it, whether
// the matrices share the quantized input (q/k/v-like shapes, interleaved
// or not) or need their own (other types and widths in the same call).
void test_matmul_shared() {
    std::mt19937 rng(5);
    ThreadPool pool(2);
    struct Case {
        GgmlType type;
        int64_t rows, cols;
        bool interleaved;
    };
    const Case cases[] = {{GgmlType::Q4_1, 576, 576, true}, {GgmlType::Q4_1, 192, 576, true},
                          {GgmlType::Q4_1, 192, 576, false}, {GgmlType::Q6_K, 32, 512, false},
                          {GgmlType::F16, 5, 576, false},    {GgmlType::Q8_0, 16, 576, true},
                          {GgmlType::Q4_0, 3, 96, false},    {GgmlType::BF16, 7, 576, false}};
    for (int64_t tokens : {1, 3, 16, 70}) {
        std::vector<std::vector<uint8_t>> bytes, storage(std::size(cases));
        std::vector<QuantMatrix> matrices;
        for (const Case& c : cases) {
            bytes.push_back(random_matrix(c.type, c.rows, c.cols, rng));
            matrices.push_back(matrix_of(c.type, bytes.back(), c.rows, c.cols));
        }
        for (size_t i = 0; i < matrices.size(); ++i)
            if (cases[i].interleaved) matrices[i] = prepare_for_matmul(matrices[i], storage[i]);
        // Inputs by width: the cases of one width share x.
        std::vector<float> x576 = random_activations(576 * tokens, rng), x512 = random_activations(512 * tokens, rng),
                           x96 = random_activations(96 * tokens, rng);
        const auto x_for = [&](int64_t cols) { return cols == 576 ? x576.data() : cols == 512 ? x512.data() : x96.data(); };
        std::vector<std::vector<float>> alone(matrices.size()), shared(matrices.size());
        for (size_t i = 0; i < matrices.size(); ++i) {
            alone[i].assign(matrices[i].rows * tokens, NAN);
            shared[i].assign(matrices[i].rows * tokens, NAN);
            matmul(matrices[i], x_for(matrices[i].cols), tokens, alone[i].data(), pool);
        }
        // The 576-wide ones in one call (they mix Q4_1, interleaved or not,
        // with Q8_0, F16 and BF16, which quantize differently or not at all).
        matmul_shared({{&matrices[0], shared[0].data()}, {&matrices[1], shared[1].data()}, {&matrices[2], shared[2].data()},
                       {&matrices[4], shared[4].data()}, {&matrices[5], shared[5].data()}, {&matrices[7], shared[7].data()}},
                      x576.data(), tokens, pool);
        matmul_shared({{&matrices[3], shared[3].data()}}, x512.data(), tokens, pool);
        matmul_shared({{&matrices[6], shared[6].data()}}, x96.data(), tokens, pool);
        for (size_t i = 0; i < matrices.size(); ++i)
            check(alone[i] == shared[i], "matmul_shared = matmul, case " + std::to_string(i) + " tokens=" + std::to_string(tokens));
    }
}

// matvec_rows must agree with matmul on the same rows.
void test_matvec_rows() {
    std::mt19937 rng(3);
    ThreadPool pool(1);
    for (GgmlType type : {GgmlType::Q4_1, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::IQ4_XS, GgmlType::Q2_K, GgmlType::Q6_K,
                          GgmlType::F16, GgmlType::IQ2_XXS, GgmlType::IQ3_S, GgmlType::MXFP4}) {
        const int64_t cols = ggml_type_info(static_cast<uint32_t>(type))->block_elements == 256 ? 512 : 96;
        const int64_t rows = 21;
        const std::vector<uint8_t> w = random_matrix(type, rows, cols, rng);
        const std::vector<float> x = random_activations(cols, rng);
        const QuantMatrix m = matrix_of(type, w, rows, cols);
        std::vector<float> all(rows), part(rows - 8);
        matmul(m, x.data(), 1, all.data(), pool);
        matvec_rows(m, x.data(), 3, rows - 5, part.data());
        check(std::equal(part.begin(), part.end(), all.begin() + 3), "matvec_rows " + name_of(type));
    }
}

void test_dense() {
    std::mt19937 rng(11);
    for (const IsaKernels* isa : available_isas()) {
        for (int64_t n : {0, 1, 15, 16, 17, 100, 1000}) {
            const std::vector<float> a = random_activations(n, rng), b = random_activations(n, rng);
            double want = 0.0, mag = 0.0;
            for (int64_t i = 0; i < n; ++i) {
                want += static_cast<double>(a[i]) * b[i];
                mag += std::fabs(static_cast<double>(a[i]) * b[i]);
            }
            const float got = isa->dot_f32(a.data(), b.data(), n);
            check(std::fabs(got - want) <= (n + 1) * std::ldexp(mag, -24) + 1e-6,
                  std::string("dot_f32 ") + isa->name + " n=" + std::to_string(n));

            std::vector<float> y = b;
            isa->axpy_f32(0.75f, a.data(), y.data(), n);
            bool ok = true;
            for (int64_t i = 0; i < n; ++i) ok &= std::fabs(y[i] - (b[i] + 0.75 * a[i])) <= 1e-6 * (1 + std::fabs(y[i]));
            check(ok, std::string("axpy_f32 ") + isa->name + " n=" + std::to_string(n));
        }
    }
    const std::vector<float> a = {1.0f, 2.0f, 3.0f};
    check(dot_f32(a.data(), a.data(), 3) == 14.0f, "dot_f32 (active build)");
    const std::string isa = active_isa();
    check(isa == "scalar" || isa == "avx2" || isa == "avx512" || isa == "amx" || isa == "neon", "active_isa() = " + isa);
}

void test_errors() {
    ThreadPool pool(1);
    const std::vector<uint8_t> w(64);
    float x[32] = {}, y[1];
    bool threw = false;
    try {
        matmul({GgmlType::Q8_1, w.data(), 1, 32, 36}, x, 1, y, pool);
    } catch (const std::exception&) {
        threw = true;
    }
    check(threw, "matmul rejects a type without kernels");
    // Types without kernels are still known by name and geometry, so the
    // loader can say which one a file holds.
    const GgmlTypeInfo* nvfp4 = ggml_type_info(static_cast<uint32_t>(GgmlType::NVFP4));
    check(nvfp4 && !nvfp4->supported && ggml_type_name(40) == "NVFP4" && nvfp4->block_bytes == 36,
          "NVFP4 is known and unsupported");
    check(kernel_slot(GgmlType::NVFP4) < 0 && ggml_type_info(99) == nullptr, "no kernels for NVFP4, no type 99");
}

// --- benchmark ------------------------------------------------------------------------

// Seconds on the wall clock, or of the process's CPU time: with one
// thread (no workers spinning) that is the kernel's own time, which a
// machine busy with other work inflates far less than wall time.
double now_seconds(bool cpu_time) {
    if (!cpu_time) return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The best of several timed rounds: other processes on the machine only
// ever make a round slower.
double seconds_per_call(const std::function<void()>& fn, bool cpu_time = false) {
    fn();  // warm caches and the pool
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
        int calls = 0;
        const double start = now_seconds(cpu_time);
        double elapsed = 0.0;
        while (elapsed < 0.1 || calls < 2) {
            fn();
            ++calls;
            elapsed = now_seconds(cpu_time) - start;
        }
        best = std::min(best, elapsed / calls);
    }
    return best;
}

void bench(int threads, const std::string& only_type) {
    struct Case {
        GgmlType type;
        int64_t cols, rows;
    };
    const Case cases[] = {{GgmlType::Q4_1, 576, 576},  {GgmlType::Q4_1, 576, 192},  {GgmlType::Q4_1, 576, 1536},
                          {GgmlType::Q4_1, 1536, 576}, {GgmlType::Q8_0, 576, 49152}, {GgmlType::Q4_0, 576, 1536},
                          {GgmlType::Q4_K, 1536, 576}, {GgmlType::Q6_K, 1536, 576},  {GgmlType::F16, 576, 576},
                          {GgmlType::BF16, 576, 576},  {GgmlType::BF16, 576, 1536}, {GgmlType::BF16, 1536, 576},
                          {GgmlType::F16, 576, 1536},  {GgmlType::Q5_0, 576, 1536}, {GgmlType::Q5_1, 576, 1536},
                          {GgmlType::Q4_K, 768, 1536}, {GgmlType::Q5_K, 1536, 576}, {GgmlType::Q6_K, 768, 1536},
                          {GgmlType::MXFP4, 1536, 576}, {GgmlType::IQ2_XXS, 1536, 576}, {GgmlType::IQ2_XS, 1536, 576},
                          {GgmlType::IQ2_S, 1536, 576}, {GgmlType::IQ3_XXS, 1536, 576}, {GgmlType::IQ3_S, 1536, 576},
                          {GgmlType::IQ1_S, 1536, 576}, {GgmlType::IQ1_M, 1536, 576}, {GgmlType::TQ1_0, 1536, 576},
                          {GgmlType::TQ2_0, 1536, 576}};
    ThreadPool pool(threads);
    std::mt19937 rng(1);
    const bool cpu_time = threads == 1;
    std::printf("%d threads (timed by %s)\n", threads, cpu_time ? "CPU time" : "wall clock");
    std::printf("%-8s %-6s %14s %12s %12s %12s\n", "build", "type", "cols->rows", "GFLOP/s@1", "GFLOP/s@16",
                "GFLOP/s@512");  // type "Q4_1i": the interleaved layout
    for (const IsaKernels* isa : available_isas()) {
        // The scalar build takes minutes over every case: only for one type.
        if (std::strcmp(isa->name, "scalar") == 0 && only_type.empty()) continue;
        for (const Case& c : cases) {
            if (!only_type.empty() && name_of(c.type) != only_type) continue;
            const std::vector<uint8_t> w = random_matrix(c.type, c.rows, c.cols, rng);
            const QuantMatrix rows = matrix_of(c.type, w, c.rows, c.cols);
            std::vector<uint8_t> storage;
            const bool interleaved = can_interleave(rows) && isa->gemm_interleaved[kernel_slot(c.type)];
            const QuantMatrix packed = interleaved ? interleave(rows, storage, isa->q8_0_bytes) : rows;
            for (const QuantMatrix* m : {&rows, &packed}) {
                if (m == &packed && !interleaved) break;
                double gflops[3];
                int i = 0;
                for (int64_t tokens : {1, 16, 512}) {
                    const std::vector<float> x = random_activations(c.cols * tokens, rng);
                    std::vector<float> y(c.rows * tokens);
                    const double s =
                        seconds_per_call([&] { matmul_with(*isa, *m, x.data(), tokens, y.data(), pool); }, cpu_time);
                    gflops[i++] = 2.0 * c.rows * c.cols * tokens / s * 1e-9;
                }
                const std::string type = name_of(c.type) + (m == &packed ? "i" : "");
                const std::string shape = std::to_string(c.cols) + "->" + std::to_string(c.rows);
                std::printf("%-8s %-6s %14s %12.1f %12.1f %12.1f\n", isa->name, type.c_str(), shape.c_str(), gflops[0],
                            gflops[1], gflops[2]);
                std::fflush(stdout);
            }
        }
    }
}

// What a forward of a few positions costs next to one (speculative
// decoding's verification, BENCHMARKS.md): the float weight types over a
// 56 MB matrix each (SmolLM2's output matrix in F16), interleaved as the
// engine prepares them, per build.
void bench_small_m(int threads) {
    ThreadPool pool(threads);
    std::mt19937 rng(1);
    const int64_t token_counts[] = {1, 2, 3, 4, 5, 6, 8, 9, 12, 16};
    std::printf("%d threads; CPU ms per call at 1 token, then each count's CPU time / the 1-token one's\n", threads);
    std::printf("%-8s %-6s %14s %8s", "build", "type", "cols->rows", "ms@1");
    for (int64_t n : token_counts)
        if (n > 1) std::printf(" %6lld", static_cast<long long>(n));
    std::printf("\n");
    for (const IsaKernels* isa : available_isas()) {
        if (std::strcmp(isa->name, "scalar") == 0) continue;
        for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
            const int64_t cols = 576, rows = 49152;
            const std::vector<uint8_t> w = random_matrix(type, rows, cols, rng);
            std::vector<uint8_t> storage;
            const QuantMatrix row_layout = matrix_of(type, w, rows, cols);
            const QuantMatrix m =
                isa->gemm_interleaved[kernel_slot(type)] ? interleave(row_layout, storage, isa->q8_0_bytes) : row_layout;
            const std::vector<float> x = random_activations(cols * 16, rng);
            std::vector<float> y(rows * 16);
            double one = 0.0;
            std::printf("%-8s %-6s %14s", isa->name, (name_of(type) + (m.layout == WeightLayout::kInterleaved16 ? "i" : "")).c_str(),
                        (std::to_string(cols) + "->" + std::to_string(rows)).c_str());
            for (int64_t n : token_counts) {
                const double s = seconds_per_call([&] { matmul_with(*isa, m, x.data(), n, y.data(), pool); }, true);
                if (n == 1) {
                    one = s;
                    std::printf(" %8.3f", s * 1e3);
                } else {
                    std::printf(" %6.2f", s / one);
                }
                std::fflush(stdout);
            }
            std::printf("\n");
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--bench-small-m") {
        bench_small_m(argc > 2 ? std::atoi(argv[2]) : 2);
        return 0;
    }
    if (argc > 1 && std::string(argv[1]) == "--bench") {
        bench(argc > 2 ? std::atoi(argv[2]) : 2, argc > 3 ? argv[3] : "");
        return 0;
    }
    std::printf("builds on this machine:");
    for (const IsaKernels* isa : available_isas()) std::printf(" %s", isa->name);
    std::printf(" (active: %s)\n", active_isa());
    test_dequantize();
    test_quantizers();
    test_bf16_rounding();
    test_matmul();
    test_matvec_rows();
    test_interleaved();
    test_interleaved_extremes();
    test_matmul_shared();
    test_dense();
    test_errors();
    return report();
}
