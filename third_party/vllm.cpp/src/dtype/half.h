// IEEE 754 binary16 ("half") as raw 16-bit patterns, converted in portable
// C++. The KV cache stores K and V this way (kv_cache.h): float_to_half is
// the only rounding step, done in one place for every ISA, so the cached
// values never depend on which kernel build or batch produced them.
// half_to_float is exact (every half is a float), so the hardware
// conversions the kernel builds use (F16C, AVX-512, NEON) give the same
// floats as this one.
// The functions are static (internal linkage): the per-ISA kernel builds
// include this header too, and a shared inline copy kept by the linker could
// be one compiled with instructions another build's CPU lacks.
#pragma once
#include <cstdint>
#include <cstring>

namespace vllm {

// Round to nearest, ties to even; overflow to infinity; NaN stays NaN (quiet).
static inline uint16_t float_to_half(float f) {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t a = x & 0x7fffffffu;
    if (a >= 0x7f800000u)  // infinity or NaN
        return static_cast<uint16_t>(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u | ((a >> 13) & 0x3ffu) : 0u));
    if (a >= 0x477ff000u)  // >= 65520: rounds past the largest half (65504)
        return static_cast<uint16_t>(sign | 0x7c00u);
    if (a < 0x38800000u) {  // below 2^-14: a subnormal half (or zero)
        // Adding 0.5 leaves a float whose last mantissa bit is worth 2^-24,
        // the subnormal half step, so the FPU's own round-to-nearest-even
        // does the rounding; the mantissa is then the half's bits.
        float v;
        std::memcpy(&v, &a, sizeof v);
        v += 0.5f;
        uint32_t b;
        std::memcpy(&b, &v, sizeof b);
        return static_cast<uint16_t>(sign | (b - 0x3f000000u));
    }
    // Normal: rebias the exponent (127 -> 15) and round away the 13 low
    // mantissa bits to nearest even (a carry into the exponent is correct).
    const uint32_t odd = (a >> 13) & 1u;
    a += 0xc8000000u + 0xfffu + odd;  // 0xc8000000 == -(112 << 23)
    return static_cast<uint16_t>(sign | (a >> 13));
}

static inline float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = h & 0x7c00u;
    uint32_t bits = uint32_t(h & 0x7fffu) << 13;
    float f;
    if (exp == 0x7c00u) {  // infinity or NaN
        bits += (255u - 31u) << 23;
    } else if (exp == 0) {  // zero or subnormal: mantissa x 2^-24, exactly
        bits += 113u << 23;  // the value 2^-14 plus the mantissa's share of it
        std::memcpy(&f, &bits, sizeof f);
        f -= 6.103515625e-05f;  // 2^-14
        std::memcpy(&bits, &f, sizeof bits);
    } else {
        bits += (127u - 15u) << 23;
    }
    bits |= sign;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

}  // namespace vllm
