// ops.h's kernels compiled for neon (baseline AArch64 flags: NEON is part of it, see CMakeLists.txt).
#define VLLM_OPS_NAMESPACE neon
#include "kernels/cpu/ops_impl.h"
