// HugePageArena and map_huge_page_region: pieces are zeroed, 64-byte
// aligned, disjoint and writable, a piece larger than a region gets a
// region of its own, regions are 2 MiB aligned, and moving an arena keeps
// its pieces where they are. (Whether the kernel grants huge pages is its
// choice and is not checked: the memory works the same either way.)
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "util/huge_pages.h"
#include "check.h"

using namespace vllm;

namespace {

bool all_zero(const uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (p[i] != 0) return false;
    return true;
}

void test_region() {
    HugePageRegion r = map_huge_page_region(3 << 20);
    check(r != nullptr, "a region is mapped");
    check(reinterpret_cast<uintptr_t>(r.get()) % (2 << 20) == 0, "a region starts on a 2 MiB boundary");
    check(r.get_deleter().bytes == (4 << 20), "a region is whole 2 MiB pages (3 MiB asked: 4 MiB)");
    check(all_zero(r.get(), r.get_deleter().bytes), "a region starts zeroed");
    std::memset(r.get(), 0xab, r.get_deleter().bytes);
    check(r.get()[r.get_deleter().bytes - 1] == 0xab, "all of a region is writable");
    check(map_huge_page_region(0).get_deleter().bytes == (2 << 20), "an empty request maps one page");
}

void test_arena() {
    HugePageArena arena;
    struct Piece {
        uint8_t* p;
        size_t n;
    };
    std::vector<Piece> pieces;
    // Sizes that fill a region unevenly, then one larger than a region.
    const size_t sizes[] = {1, 63, 64, 65, 1000, 5 << 20, 7 << 20, 3, HugePageArena::kRegionBytes - 100,
                            HugePageArena::kRegionBytes + 12345, 17};
    for (size_t n : sizes) {
        uint8_t* p = arena.allocate(n);
        check(reinterpret_cast<uintptr_t>(p) % 64 == 0, "piece of " + std::to_string(n) + " bytes is 64-byte aligned");
        check(all_zero(p, n), "piece of " + std::to_string(n) + " bytes is zeroed");
        std::memset(p, 0x5a, n);
        pieces.push_back({p, n});
    }
    bool disjoint = true;
    for (size_t i = 0; i < pieces.size(); ++i)
        for (size_t j = i + 1; j < pieces.size(); ++j) {
            const auto a = reinterpret_cast<uintptr_t>(pieces[i].p), b = reinterpret_cast<uintptr_t>(pieces[j].p);
            disjoint = disjoint && (a + pieces[i].n <= b || b + pieces[j].n <= a);
        }
    check(disjoint, "pieces do not overlap");
    HugePageArena moved = std::move(arena);
    bool kept = true;
    for (const Piece& piece : pieces) kept = kept && piece.p[0] == 0x5a && piece.p[piece.n - 1] == 0x5a;
    check(kept, "a moved arena's pieces keep their place and contents");
    check(all_zero(moved.allocate(100), 100), "a moved arena hands out zeroed pieces");
}

}  // namespace

int main() {
    test_region();
    test_arena();
    return report();
}
