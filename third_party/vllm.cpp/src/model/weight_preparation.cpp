// Prepared weight copies, written in parallel (weight_preparation.h). On a
// 1B model this is nearly all of a load: half the time interleaving rows,
// half the kernel giving the copies their fresh pages (zeroed on first
// touch), and both scale with the cores that run them. The second half is
// what the prepared-weights cache saves on later loads: its pages are the
// page cache's, already there.
#include "model/weight_preparation.h"

#include <algorithm>

#include "formats/model_source.h"
#include "model/prepared_cache.h"
#include "util/thread_pool.h"

namespace vllm {

namespace {

// Rows per band: whole 16-row groups, a megabyte or so of a 1B model's
// matrices; enough bands (hundreds) for the threads to share evenly.
constexpr int64_t kBandRows = 1024;

}  // namespace

void for_each_band(const std::vector<PreparedMatrix>& plan, const ModelSource& file, ThreadPool& pool,
                   const std::function<void(const PreparedBand&)>& write) {
    std::vector<PreparedBand> bands;
    for (size_t i = 0; i < plan.size(); ++i) {
        const kernels::QuantMatrix& m = plan[i].source;
        for (int64_t row = 0; row < m.rows; row += kBandRows) {
            PreparedBand band{i, m, static_cast<size_t>(row) * m.row_bytes};
            band.source.data = m.data + band.offset;
            band.source.rows = std::min(kBandRows, m.rows - row);
            bands.push_back(band);
        }
    }
    pool.for_each_chunk(static_cast<int64_t>(bands.size()), [&](int64_t i) {
        const PreparedBand& band = bands[static_cast<size_t>(i)];
        write(band);
        file.release(band.source.data, static_cast<size_t>(band.source.rows) * band.source.row_bytes);
    });
}

void prepare_matrices(const std::vector<kernels::QuantMatrix*>& matrices, HugePageArena& arena, const ModelSource& file,
                      int threads) {
    std::vector<PreparedMatrix> plan;
    for (kernels::QuantMatrix* m : matrices) {
        // The layout is decided on the whole matrix: only its last band can
        // have a row count that is not a multiple of the row groups. A
        // matrix the kernels read in the file's layout is copied as it is:
        // on huge pages too, instead of the file's small ones.
        if (m->rows > 0) plan.push_back({m, *m, kernels::matmul_layout(*m)});
    }
    ThreadPool pool(threads);
    if (prepare_through_cache(plan, arena, file, pool)) return;
    std::vector<uint8_t*> copies;
    for (const PreparedMatrix& p : plan) copies.push_back(arena.allocate(p.bytes()));
    // The arena's pages are fresh and zeroed, as write_matmul_layout needs.
    for_each_band(plan, file, pool, [&](const PreparedBand& band) {
        kernels::write_matmul_layout(band.source, plan[band.matrix].form, copies[band.matrix] + band.offset);
    });
    for (size_t i = 0; i < plan.size(); ++i) {
        *plan[i].target = plan[i].form;
        plan[i].target->data = copies[i];
    }
}

}  // namespace vllm
