// ops.h's kernels compiled for scalar (flags from the file suffix, see CMakeLists.txt).
#define VLLM_OPS_NAMESPACE scalar
#include "kernels/cpu/ops_impl.h"
