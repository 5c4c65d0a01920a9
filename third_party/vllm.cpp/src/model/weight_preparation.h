// The load's one heavy step: copies of a model's matrices in the layout the
// matmul kernels read (kernels::matmul_layout), written into huge pages,
// in parallel, each band of rows written straight from the mapped file
// into its place and the file's pages of that band released at once.
#pragma once
#include <vector>

#include "kernels/cpu/kernels.h"
#include "util/huge_pages.h"

namespace vllm {

class ModelSource;

// Points every matrix in `matrices` at its prepared copy in `arena`
// (matrices with no rows are left alone). The copies are written by
// `threads` threads (0: ThreadPool::default_thread_count()), band by band
// in any order; a band's file pages are released once its copy is
// written, so the file's pages and the copies are never both resident
// whole (the load's peak memory).
void prepare_matrices(const std::vector<kernels::QuantMatrix*>& matrices, HugePageArena& arena, const ModelSource& file,
                      int threads = 0);

}  // namespace vllm
