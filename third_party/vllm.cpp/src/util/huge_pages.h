// Large, long-lived buffers on transparent huge pages. A decode step reads
// every weight byte once, in order: on 4 KiB pages that is a new page every
// 64 cache lines, each a TLB miss and a page walk beside the stream, where
// a 2 MiB page serves 32,768 lines (decode 4-5% faster for SmolLM2 Q4_1,
// 7-10% for its BF16 and F16 files; BENCHMARKS.md). Linux backs an
// anonymous mapping with huge pages when it is advised so (MADV_HUGEPAGE):
// the common setting of /sys/kernel/mm/transparent_hugepage/enabled,
// "madvise", does nothing without the advice. Where there is no such
// advice (other systems) or the kernel declines it, the memory is ordinary
// pages and works the same.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace vllm {

// Unmaps a region of `bytes` on destruction.
struct RegionUnmap {
    size_t bytes = 0;
    void operator()(uint8_t* base) const;
};
using HugePageRegion = std::unique_ptr<uint8_t[], RegionUnmap>;

// At least `bytes` (rounded up to whole 2 MiB pages) of zeroed memory,
// 2 MiB aligned and advised as huge pages; pages are committed as they are
// first touched, so an unused tail costs nothing. std::bad_alloc when the
// system has no memory to map.
HugePageRegion map_huge_page_region(size_t bytes);

// Address space of at least `bytes` (whole 2 MiB pages), 2 MiB aligned and
// not accessible, for a mapping to be placed over with MAP_FIXED (a file
// mapped where huge pages can back it); null when there is no room.
HugePageRegion reserve_huge_page_aligned(size_t bytes);

// Hands out zeroed, 64-byte-aligned pieces of huge-page regions (of
// kRegionBytes, or one piece's size when larger) for buffers that live as
// long as the arena: a model's matmul-ready weight copies. Moving the arena
// keeps every piece where it is.
class HugePageArena {
public:
    uint8_t* allocate(size_t bytes);

    // Keeps `region` (another mapping handed over whole, such as a mapped
    // cache file of prepared weights) for as long as the arena lives.
    void keep(HugePageRegion region) { kept_.push_back(std::move(region)); }

    static constexpr size_t kRegionBytes = size_t(32) << 20;

private:
    std::vector<HugePageRegion> regions_;
    size_t used_ = 0;  // bytes handed out from the last region
    std::vector<HugePageRegion> kept_;
};

}  // namespace vllm
