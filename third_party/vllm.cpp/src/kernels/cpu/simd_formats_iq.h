// The SIMD format (simd_formats.h's contract) of the codec types
// iq_blocks.h describes (IQ1_S .. IQ3_S, TQ1_0, TQ2_0): a super-block
// format. (MXFP4 is one of simd_formats.h's signed 32-element formats.)
//
// A codec super-block's weights are decoded by the codec (grid lookups,
// sign bits) 64 at a time into bytes offset by kOffset (group8_u), so they are the
// unsigned operand the super-block tiles multiply (u = q + kOffset, at
// most 124 for IQ3_XXS, within the int16 pair sums of the u8 x s8 dot);
// the offset comes back out through corr = -kOffset * scale on the
// activations' 16-element sums, as Q3_K's and Q6_K's does. The decoding
// is scalar; tiles over many tokens pay it once per row tile (the panel).
// Include only from *_avx2.cpp / *_avx512.cpp / *_neon*.cpp (internal linkage).
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/cpu/iq_blocks.h"
#include "kernels/cpu/simd_formats.h"

namespace vllm::kernels {
namespace {

template <class V, class Codec>
struct CodecFormat {
    static constexpr bool kSuperBlock = true;
    static constexpr bool kMins = false;
    static constexpr bool kGroupMins = false;
    static constexpr int kScalesPerStep = 4;
    using Block = typename Codec::Block;
    using Row = KRow<V, Block>;
    [[gnu::always_inline]] static void row(const uint8_t* p, int64_t sb, Row& r) {
        r.b = reinterpret_cast<const Block*>(p) + sb;
        r.d = V::set1(Codec::d(*r.b));
        r.dmin = V::set1(0.0f);
        uint8_t sc[16];
        for (int k = 0; k < 16; ++k) sc[k] = static_cast<uint8_t>(Codec::scale16(*r.b, k));
        uint64_t half[2];
        std::memcpy(half, sc, sizeof half);
        r.scales = V::u8x16_to_i16(half[0], half[1]);
        r.corr = V::mullo16(r.scales, V::set1_16(static_cast<int16_t>(-Codec::kOffset)));
    }
    template <int S>
    static typename V::I weights(const Row& r) {
        alignas(64) uint64_t u[8];
        for (int g = 0; g < 8; ++g) u[g] = Codec::group8_u(*r.b, 8 * S + g);
        return V::load(u);
    }
};

}  // namespace
}  // namespace vllm::kernels
