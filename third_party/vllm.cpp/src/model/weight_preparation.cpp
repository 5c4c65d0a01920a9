// Prepared weight copies, written in parallel (weight_preparation.h). On a
// 1B model this is nearly all of a load: half the time interleaving rows,
// half the kernel giving the copies their fresh pages (zeroed on first
// touch), and both scale with the cores that run them.
#include "model/weight_preparation.h"

#include <algorithm>

#include "formats/model_source.h"
#include "util/thread_pool.h"

namespace vllm {

namespace {

// Rows per band: whole 16-row groups, a megabyte or so of a 1B model's
// matrices; enough bands (hundreds) for the threads to share evenly.
constexpr int64_t kBandRows = 1024;

// One band of one matrix: its rows in the file, the layout to write them
// in, and where the copy of its first row goes.
struct Band {
    kernels::QuantMatrix source;
    kernels::QuantMatrix form;
    uint8_t* copy;
};

}  // namespace

void prepare_matrices(const std::vector<kernels::QuantMatrix*>& matrices, HugePageArena& arena, const ModelSource& file,
                      int threads) {
    std::vector<Band> bands;
    for (kernels::QuantMatrix* m : matrices) {
        if (m->rows <= 0) continue;
        // The layout is decided on the whole matrix: only its last band can
        // have a row count that is not a multiple of the row groups.
        const kernels::QuantMatrix form = kernels::matmul_layout(*m);
        // A matrix the kernels read in the file's layout is copied as it
        // is: on huge pages too, instead of the file's small ones.
        uint8_t* copy = arena.allocate(static_cast<size_t>(m->rows) * m->row_bytes);
        for (int64_t row = 0; row < m->rows; row += kBandRows) {
            Band band{*m, form, copy + row * m->row_bytes};
            band.source.data = m->data + row * m->row_bytes;
            band.source.rows = std::min(kBandRows, m->rows - row);
            bands.push_back(band);
        }
        *m = form;
        m->data = copy;
    }
    // The arena's pages are fresh and zeroed, as write_matmul_layout needs.
    ThreadPool pool(threads);
    pool.for_each_chunk(static_cast<int64_t>(bands.size()), [&](int64_t i) {
        const Band& band = bands[static_cast<size_t>(i)];
        kernels::write_matmul_layout(band.source, band.form, band.copy);
        file.release(band.source.data, static_cast<size_t>(band.source.rows) * band.source.row_bytes);
    });
}

}  // namespace vllm
