// Picks the kernel build for this CPU once, at first use: the best one the
// CPU runs, or a lower one named by VLLM_CPP_ISA (for tests and
// comparisons). The SIMD builds are only called after the check, since
// their code may use instructions this CPU lacks.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/x86_features.h"
#include "util/error.h"

namespace vllm::kernels {

namespace {

enum Level { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAmx = 3 };
// AArch64 has one level above scalar. (x86 and ARM builds never meet in
// one binary: each name is only known where its kernels are compiled.)
constexpr int kNeon = 1;

int cpu_level() {
#ifdef VLLM_HAVE_X86_KERNELS
    const X86Features& cpu = x86_features();
    const bool avx2 = cpu.avx2 && cpu.fma && cpu.f16c && cpu.bmi2;
    if (avx2 && cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.avx512dq && cpu.avx512vnni)
        return cpu.amx_bf16 ? kAmx : kAvx512;
    if (avx2) return kAvx2;
#endif
#ifdef VLLM_HAVE_NEON_KERNELS
    return kNeon;  // NEON is part of baseline AArch64 (the SDOT variant is picked in kernels_neon.cpp)
#endif
    return kScalar;
}

int level_named(const char* name) {
    if (std::strcmp(name, "scalar") == 0) return kScalar;
#ifdef VLLM_HAVE_NEON_KERNELS
    // On ARM only "neon" names a level above scalar (the x86 names would
    // alias its number).
    if (std::strcmp(name, "neon") == 0) return kNeon;
#else
    if (std::strcmp(name, "avx2") == 0) return kAvx2;
    if (std::strcmp(name, "avx512") == 0) return kAvx512;
    if (std::strcmp(name, "amx") == 0) return kAmx;
#endif
    return -1;
}

const IsaKernels& kernels_at(int level) {
#ifdef VLLM_HAVE_X86_KERNELS
    if (level == kAmx) return amx_kernels();
    if (level == kAvx512) return avx512_kernels();
    if (level == kAvx2) return avx2_kernels();
#endif
#ifdef VLLM_HAVE_NEON_KERNELS
    if (level == kNeon) return neon_kernels();
#endif
    (void)level;
    return scalar_kernels();
}

// The level require_isa() asked for before the first kernel ran; -1: none.
std::atomic<int> g_requested_level{-1};

}  // namespace

const IsaKernels* find_isa(const char* name) {
    const int level = level_named(name);
    if (level < 0 || level > cpu_level()) return nullptr;
    return &kernels_at(level);
}

const IsaKernels& active_kernels() {
    static const IsaKernels& kernels = [] () -> const IsaKernels& {
        int level = cpu_level();
        if (const char* env = std::getenv("VLLM_CPP_ISA")) {
            const int wanted = level_named(env);
            if (wanted >= 0 && wanted < level) level = wanted;
        } else if (g_requested_level.load() >= 0) {
            level = g_requested_level.load();
        }
        return kernels_at(level);
    }();
    return kernels;
}

void require_isa(const std::string& name) {
    const IsaKernels* wanted = find_isa(name.c_str());
    if (wanted == nullptr)
        throw_invalid_argument("engine option 'isa' '" + name + "' is not a kernel build this CPU runs (best: " +
                               kernels_at(cpu_level()).name + ")");
    // Before the first kernel ran, this request decides; a concurrent first
    // use may decide first, which the check below then reports.
    g_requested_level.store(level_named(name.c_str()));
    const IsaKernels& active = active_kernels();
    if (&active != wanted)
        throw_invalid_argument("engine option 'isa' '" + name + "' conflicts with the kernels this process already uses ('" +
                               active.name + "'): the instruction set is process-wide, chosen by the first engine "
                               "(or VLLM_CPP_ISA)");
}

const char* active_isa() { return active_kernels().name; }

int kernel_slot(GgmlType type) {
    switch (type) {
        case GgmlType::F32: return kSlotF32;
        case GgmlType::F16: return kSlotF16;
        case GgmlType::BF16: return kSlotBF16;
        case GgmlType::Q4_0: return kSlotQ4_0;
        case GgmlType::Q4_1: return kSlotQ4_1;
        case GgmlType::Q5_0: return kSlotQ5_0;
        case GgmlType::Q5_1: return kSlotQ5_1;
        case GgmlType::Q8_0: return kSlotQ8_0;
        case GgmlType::IQ4_NL: return kSlotIQ4_NL;
        case GgmlType::IQ4_XS: return kSlotIQ4_XS;
        case GgmlType::Q2_K: return kSlotQ2_K;
        case GgmlType::Q3_K: return kSlotQ3_K;
        case GgmlType::Q4_K: return kSlotQ4_K;
        case GgmlType::Q5_K: return kSlotQ5_K;
        case GgmlType::Q6_K: return kSlotQ6_K;
        case GgmlType::IQ2_XXS: return kSlotIQ2_XXS;
        case GgmlType::IQ2_XS: return kSlotIQ2_XS;
        case GgmlType::IQ2_S: return kSlotIQ2_S;
        case GgmlType::IQ3_XXS: return kSlotIQ3_XXS;
        case GgmlType::IQ3_S: return kSlotIQ3_S;
        case GgmlType::IQ1_S: return kSlotIQ1_S;
        case GgmlType::IQ1_M: return kSlotIQ1_M;
        case GgmlType::TQ1_0: return kSlotTQ1_0;
        case GgmlType::TQ2_0: return kSlotTQ2_0;
        case GgmlType::MXFP4: return kSlotMXFP4;
        default: return -1;
    }
}

float dot_f32(const float* a, const float* b, int64_t n) { return active_kernels().dot_f32(a, b, n); }

void axpy_f32(float a, const float* x, float* y, int64_t n) { active_kernels().axpy_f32(a, x, y, n); }

}  // namespace vllm::kernels
