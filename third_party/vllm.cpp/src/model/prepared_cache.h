// The prepared-weights cache: a large GGUF model's matrices in the layout
// the matmul kernels read (model/weight_preparation.h), written to a file
// once, at the first load, and mapped by every later load. Rewriting a
// model's matrices costs a load little CPU but fresh memory for every copy
// (the kernel zeroes each new page, seconds for a 1B model on a virtual
// machine); a mapped cache file's pages are the page cache's, already
// there, so a later load costs about what mapping the file costs
// (llama.cpp's load). docs/features/prepared-weights-cache.md has the
// user's side.
//
// An entry is one file per model file path and layout, in the directory
// VLLM_CPP_PREPARED_CACHE names (default $XDG_CACHE_HOME/vllm-cpp/prepared,
// else ~/.cache/vllm-cpp/prepared; "off" or "0" turns the cache off): a
// header, a table of the matrices, the model file's path, then from 2 MiB
// on the copies (huge-page aligned). An entry is used only when all of its
// header agrees with this load: the model file's device, inode, size,
// modification and change times (read from the mapped descriptor), the
// table (every matrix's type, shape and layout as this build's kernels
// want it), a fingerprint of the layout code (the interleaving of a probe
// matrix of each type), the file's length (a truncated entry is refused),
// and a hash of each copy's first bytes (an entry whose data never reached
// the disk reads as zeros). Otherwise it is written again. Entries are
// written under a temporary name and renamed when whole, so no reader sees
// half of one; entries of model files that changed or are gone are deleted
// when a new entry is written. Any failure (no space, a read-only
// directory) leaves the load to the copies in memory, as without a cache.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "model/weight_preparation.h"

namespace vllm {

struct PreparedCacheSettings {
    bool enabled = false;
    std::string directory;
    // Models whose copies are smaller are not cached: they load in a
    // fraction of a second anyway (VLLM_CPP_PREPARED_CACHE_MIN_MB, default 256).
    size_t min_bytes = size_t(256) << 20;

    // From the environment; an unparsable VLLM_CPP_PREPARED_CACHE_MIN_MB is
    // an invalid-argument error naming it.
    static PreparedCacheSettings from_environment();
};

// Points every matrix of `plan` at its copy in a cache entry's mapping
// (kept by `arena`), mapping a valid entry or writing one first (the
// bands on `pool`, their file pages released as they are written). False
// when the cache does not serve this load (off, the model too small or not
// one file, any step failed): the matrices are then as they were.
bool prepare_through_cache(const std::vector<PreparedMatrix>& plan, HugePageArena& arena, const ModelSource& file,
                           ThreadPool& pool);

}  // namespace vllm
