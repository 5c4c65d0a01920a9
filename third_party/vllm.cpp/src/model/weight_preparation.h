// The load's one heavy step: copies of a model's matrices in the layout the
// matmul kernels read (kernels::matmul_layout), written into huge pages,
// in parallel, each band of rows written straight from the mapped file
// into its place and the file's pages of that band released at once; or,
// for a large model file, mapped from the prepared-weights cache written by
// an earlier load (model/prepared_cache.h).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "util/huge_pages.h"

namespace vllm {

class ModelSource;
class ThreadPool;

// Points every matrix in `matrices` at its prepared copy in `arena`
// (matrices with no rows are left alone). The copies are written by
// `threads` threads (0: ThreadPool::default_thread_count()), band by band
// in any order; a band's file pages are released once its copy is
// written, so the file's pages and the copies are never both resident
// whole (the load's peak memory). Where the prepared-weights cache serves
// the file, the copies are that cache's mapping instead (kept by `arena`).
void prepare_matrices(const std::vector<kernels::QuantMatrix*>& matrices, HugePageArena& arena, const ModelSource& file,
                      int threads = 0);

// One matrix to prepare: where it is used, its rows in the file, and the
// layout the kernels read (decided on the whole matrix).
struct PreparedMatrix {
    kernels::QuantMatrix* target;
    kernels::QuantMatrix source;
    kernels::QuantMatrix form;
    size_t bytes() const { return static_cast<size_t>(source.rows) * source.row_bytes; }
};

// A band of whole row groups of one matrix: its rows in the file, and the
// byte offset of its first row within the matrix's copy.
struct PreparedBand {
    size_t matrix;  // index into the plan
    kernels::QuantMatrix source;
    size_t offset;
};

// Calls write(band) for every band of `plan` on `pool`'s threads (in any
// order), then releases the band's file pages. write() must put the band
// in its matrix's form (kernels::write_matmul_layout) wherever the copy is.
void for_each_band(const std::vector<PreparedMatrix>& plan, const ModelSource& file, ThreadPool& pool,
                   const std::function<void(const PreparedBand&)>& write);

}  // namespace vllm
