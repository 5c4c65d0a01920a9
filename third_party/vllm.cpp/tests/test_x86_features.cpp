// x86_features() (CPUID + XGETBV, read by the engine itself) agrees with
// the compiler's __builtin_cpu_supports on every flag the kernel dispatch
// uses, on the CPU that runs the test. Elsewhere it reports nothing.
#include <cstdio>
#include <string>

#include "kernels/cpu/x86_features.h"
#include "check.h"

using vllm::kernels::x86_features;

int main() {
    const auto& f = x86_features();
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    const struct { const char* name; bool ours; bool compiler; } flags[] = {
        {"avx2", f.avx2, __builtin_cpu_supports("avx2") != 0},
        {"fma", f.fma, __builtin_cpu_supports("fma") != 0},
        {"f16c", f.f16c, __builtin_cpu_supports("f16c") != 0},
        {"bmi2", f.bmi2, __builtin_cpu_supports("bmi2") != 0},
        {"avx512f", f.avx512f, __builtin_cpu_supports("avx512f") != 0},
        {"avx512bw", f.avx512bw, __builtin_cpu_supports("avx512bw") != 0},
        {"avx512vl", f.avx512vl, __builtin_cpu_supports("avx512vl") != 0},
        {"avx512dq", f.avx512dq, __builtin_cpu_supports("avx512dq") != 0},
        {"avx512vnni", f.avx512vnni, __builtin_cpu_supports("avx512vnni") != 0},
        {"avx512bf16", f.avx512bf16, __builtin_cpu_supports("avx512bf16") != 0},
    };
    std::printf("this CPU:");
    for (const auto& flag : flags) {
        if (flag.ours) std::printf(" %s", flag.name);
        check(flag.ours == flag.compiler, std::string(flag.name) + ": ours " + (flag.ours ? "yes" : "no") +
                                              ", __builtin_cpu_supports " + (flag.compiler ? "yes" : "no"));
    }
    // AMX also needs the kernel's permission (asked for by the probe), so
    // only one direction holds; on Linux 5.16+ with the CPU flag, ours too.
    if (f.amx_bf16) std::printf(" amx-bf16");
    check(!f.amx_bf16 || (__builtin_cpu_supports("amx-bf16") && f.avx512bf16), "amx_bf16 only with the CPU flag");
    std::printf("\n");
#else
    check(!f.avx2 && !f.avx512f, "no x86 features reported off x86");
#endif
    return report();
}
