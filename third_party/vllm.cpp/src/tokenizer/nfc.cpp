#include "tokenizer/nfc.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "tokenizer/nfc_tables.h"

namespace vllm {

namespace {

// Hangul syllables compose and decompose by arithmetic (Unicode 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

// Below U+00C0 nothing decomposes and every combining class is 0.
constexpr uint32_t kFirstAffected = 0xC0;

uint8_t combining_class(uint32_t c) {
    const CombiningClassRange* end = kCombiningClasses + kCombiningClassCount;
    const CombiningClassRange* it = std::upper_bound(kCombiningClasses, end, c,
                                                     [](uint32_t v, const CombiningClassRange& r) { return v < r.first; });
    if (it == kCombiningClasses) return 0;
    --it;
    return c <= it->last ? it->ccc : 0;
}

const Decomposition* find_decomposition(uint32_t c) {
    const Decomposition* end = kDecompositions + kDecompositionCount;
    const Decomposition* it =
        std::lower_bound(kDecompositions, end, c, [](const Decomposition& d, uint32_t v) { return d.cpt < v; });
    return it != end && it->cpt == c ? it : nullptr;
}

uint64_t pair_key(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }

const std::unordered_map<uint64_t, uint32_t>& compositions() {
    static const std::unordered_map<uint64_t, uint32_t> table = [] {
        std::unordered_map<uint64_t, uint32_t> t;
        for (size_t i = 0; i < kDecompositionCount; ++i) {
            const Decomposition& d = kDecompositions[i];
            if (d.composes) t.emplace(pair_key(d.first, d.second), d.cpt);
        }
        return t;
    }();
    return table;
}

void decompose(uint32_t c, std::vector<uint32_t>& out) {
    if (c >= kSBase && c < kSBase + kSCount) {
        const uint32_t s = c - kSBase;
        out.push_back(kLBase + s / kNCount);
        out.push_back(kVBase + (s % kNCount) / kTCount);
        if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
        return;
    }
    const Decomposition* d = c >= kFirstAffected ? find_decomposition(c) : nullptr;
    if (d == nullptr) {
        out.push_back(c);
        return;
    }
    decompose(d->first, out);
    if (d->second != 0) decompose(d->second, out);
}

// The primary composite of a starter and the next character, or 0.
uint32_t compose(uint32_t starter, uint32_t c) {
    if (starter >= kLBase && starter < kLBase + kLCount && c >= kVBase && c < kVBase + kVCount) {
        return kSBase + ((starter - kLBase) * kVCount + (c - kVBase)) * kTCount;
    }
    if (starter >= kSBase && starter < kSBase + kSCount && (starter - kSBase) % kTCount == 0 && c > kTBase &&
        c < kTBase + kTCount) {
        return starter + (c - kTBase);
    }
    auto it = compositions().find(pair_key(starter, c));
    return it == compositions().end() ? 0 : it->second;
}

// Canonical decomposition then canonical order into `d`, with each code
// point's combining class in `ccc`.
void decompose_ordered(const std::vector<uint32_t>& cpts, std::vector<uint32_t>& d, std::vector<uint8_t>& ccc) {
    d.reserve(cpts.size() + 8);
    for (uint32_t c : cpts) decompose(c, d);

    // Canonical order: each run of non-starters sorted by combining class,
    // stably.
    ccc.resize(d.size());
    for (size_t i = 0; i < d.size(); ++i) ccc[i] = combining_class(d[i]);
    for (size_t i = 0; i < d.size();) {
        if (ccc[i] == 0) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < d.size() && ccc[j] != 0) ++j;
        std::vector<std::pair<uint8_t, uint32_t>> run;
        for (size_t k = i; k < j; ++k) run.emplace_back(ccc[k], d[k]);
        std::stable_sort(run.begin(), run.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (size_t k = i; k < j; ++k) std::tie(ccc[k], d[k]) = run[k - i];
        i = j;
    }
}

}  // namespace

void nfd_normalize(std::vector<uint32_t>& cpts) {
    if (std::all_of(cpts.begin(), cpts.end(), [](uint32_t c) { return c < kFirstAffected; })) return;
    std::vector<uint32_t> d;
    std::vector<uint8_t> ccc;
    decompose_ordered(cpts, d, ccc);
    cpts.swap(d);
}

void nfc_normalize(std::vector<uint32_t>& cpts) {
    if (std::all_of(cpts.begin(), cpts.end(), [](uint32_t c) { return c < kFirstAffected; })) return;
    std::vector<uint32_t> d;
    std::vector<uint8_t> ccc;
    decompose_ordered(cpts, d, ccc);

    // Composition: a character joins the last starter unless a character
    // between them has class 0 or a class at least its own (is blocking).
    cpts.clear();
    size_t starter = 0;
    bool have_starter = false;
    int last_class = -1;
    for (size_t i = 0; i < d.size(); ++i) {
        const int cls = ccc[i];
        if (have_starter && (last_class < cls || last_class == 0)) {
            const uint32_t composite = compose(cpts[starter], d[i]);
            if (composite != 0) {
                cpts[starter] = composite;
                continue;
            }
        }
        if (cls == 0) {
            starter = cpts.size();
            have_starter = true;
        }
        last_class = cls;
        cpts.push_back(d[i]);
    }
}

}  // namespace vllm
