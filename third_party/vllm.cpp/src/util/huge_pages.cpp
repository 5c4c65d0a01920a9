#include "util/huge_pages.h"

#include <sys/mman.h>

#include <new>

namespace vllm {

namespace {

constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kPieceAlignment = 64;  // a cache line: what the kernels' loads assume

size_t round_up(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

}  // namespace

void RegionUnmap::operator()(uint8_t* base) const {
    if (base != nullptr) ::munmap(base, bytes);
}

namespace {

// An anonymous mapping of `bytes` (whole huge pages) with `prot`, 2 MiB
// aligned; null when there is no room.
HugePageRegion map_aligned(size_t bytes, int prot) {
    const size_t size = round_up(bytes == 0 ? 1 : bytes, kHugePage);
    // mmap aligns to a small page only: map one huge page more, then unmap
    // the unaligned head and whatever is left after the aligned run.
    void* raw = ::mmap(nullptr, size + kHugePage, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const auto start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = round_up(start, kHugePage), end = start + size + kHugePage;
    if (aligned > start) ::munmap(raw, aligned - start);
    if (end > aligned + size) ::munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
    return HugePageRegion(reinterpret_cast<uint8_t*>(aligned), RegionUnmap{size});
}

}  // namespace

HugePageRegion map_huge_page_region(size_t bytes) {
    HugePageRegion region = map_aligned(bytes, PROT_READ | PROT_WRITE);
    if (!region) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    // Advice only: where the kernel refuses it, the region keeps small pages.
    ::madvise(region.get(), region.get_deleter().bytes, MADV_HUGEPAGE);
#endif
    return region;
}

HugePageRegion reserve_huge_page_aligned(size_t bytes) { return map_aligned(bytes, PROT_NONE); }

uint8_t* HugePageArena::allocate(size_t bytes) {
    const size_t piece = round_up(bytes == 0 ? 1 : bytes, kPieceAlignment);
    if (regions_.empty() || used_ + piece > regions_.back().get_deleter().bytes) {
        regions_.push_back(map_huge_page_region(piece > kRegionBytes ? piece : kRegionBytes));
        used_ = 0;
    }
    uint8_t* p = regions_.back().get() + used_;
    used_ += piece;
    return p;
}

}  // namespace vllm
