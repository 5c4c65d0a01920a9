// ops.h's kernels compiled for avx2 (flags from the file suffix, see CMakeLists.txt).
#define VLLM_OPS_NAMESPACE avx2
#include "kernels/cpu/ops_impl.h"
