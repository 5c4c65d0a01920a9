// ops.h's kernels compiled for avx512 (flags from the file suffix, see CMakeLists.txt).
#define VLLM_OPS_NAMESPACE avx512
#include "kernels/cpu/ops_impl.h"
