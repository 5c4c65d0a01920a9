#include "tokenizer/precompiled_charsmap.h"

#include <algorithm>
#include <cstring>

#include "tokenizer/case_tables.h"
#include "tokenizer/unicode.h"
#include "util/error.h"
#include "util/utf8.h"

namespace vllm {

namespace {

// A packed unit: BASE in bits 10-30 (shifted left by 8 when bit 9 is set),
// LCHECK in bits 0-7 (bit 31 set for a value unit), LEAF in bit 8; a value
// unit's low 31 bits index the replacement strings.
uint32_t base_of(uint32_t unit) { return (unit >> 10) << ((unit & (1U << 9)) >> 6); }
uint32_t lcheck_of(uint32_t unit) { return unit & ((1U << 31) | 0xFF); }
bool leaf_of(uint32_t unit) { return ((unit >> 8) & 1) != 0; }
uint32_t value_of(uint32_t unit) { return unit & ((1U << 31) - 1); }

}  // namespace

size_t utf8_sequence_length(unsigned char lead) {
    if (lead < 0xC0) return 1;
    if (lead < 0xE0) return 2;
    if (lead < 0xF0) return 3;
    return 4;
}

PrecompiledCharsmap::PrecompiledCharsmap(const std::string& blob) {
    if (blob.empty()) return;
    uint32_t trie_bytes = 0;
    if (blob.size() < sizeof(trie_bytes)) throw_model_load("the precompiled charsmap is shorter than its header");
    std::memcpy(&trie_bytes, blob.data(), sizeof(trie_bytes));  // little-endian, as GGUF and x86/ARM store it
    if (trie_bytes % 4 != 0 || trie_bytes > blob.size() - sizeof(trie_bytes)) {
        throw_model_load("the precompiled charsmap's trie (" + std::to_string(trie_bytes) + " bytes) does not fit its " +
                         std::to_string(blob.size()) + " bytes");
    }
    units_.resize(trie_bytes / 4);
    if (trie_bytes > 0) std::memcpy(units_.data(), blob.data() + sizeof(trie_bytes), trie_bytes);
    replacements_ = blob.substr(sizeof(trie_bytes) + trie_bytes);
}

bool PrecompiledCharsmap::longest_prefix(std::string_view text, size_t pos, size_t& consumed,
                                         std::string_view& replacement) const {
    return find_prefix(text, pos, text.size(), false, consumed, replacement);
}

bool PrecompiledCharsmap::find_prefix(std::string_view text, size_t pos, size_t end, bool shortest, size_t& consumed,
                                      std::string_view& replacement) const {
    if (units_.empty()) return false;
    size_t best = 0;
    uint32_t best_value = 0;
    uint64_t node = base_of(units_[0]);
    for (size_t i = pos; i < end && !(shortest && best > 0); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == 0) break;
        node ^= c;
        if (node >= units_.size() || lcheck_of(units_[node]) != c) break;
        const bool leaf = leaf_of(units_[node]);
        node ^= base_of(units_[node]);
        if (leaf) {
            if (node >= units_.size()) break;
            best = i - pos + 1;
            best_value = value_of(units_[node]);
        }
    }
    if (best == 0 || best_value >= replacements_.size()) return false;
    const size_t terminator = replacements_.find('\0', best_value);
    if (terminator == std::string::npos) return false;
    consumed = best;
    replacement = std::string_view(replacements_).substr(best_value, terminator - best_value);
    return true;
}

std::string PrecompiledCharsmap::normalize(std::string_view text) const {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        size_t consumed = 0;
        std::string_view replacement;
        if (longest_prefix(text, pos, consumed, replacement)) {
            out.append(replacement);
            pos += consumed;
            continue;
        }
        // A valid code point is copied; any other byte is one U+FFFD, as
        // llama.cpp's UGM normalizer consumes it.
        const utf8::Step step = utf8::step(text, pos);
        if (step.status == utf8::Status::VALID) {
            out.append(text.substr(pos, step.length));
            pos += step.length;
        } else {
            utf8::append(out, kReplacementChar);
            ++pos;
        }
    }
    return out;
}

namespace {

// A code point that joins the cluster before it (Grapheme_Extend and
// SpacingMark, approximated: marks, ZWNJ/ZWJ, emoji modifiers, tags).
bool extends_grapheme(uint32_t c) {
    return (codepoint_class(c) & kClassMark) != 0 || c == 0x200C || c == 0x200D || (c >= 0x1F3FB && c <= 0x1F3FF) ||
           (c >= 0xE0020 && c <= 0xE007F);
}

// Grapheme_Cluster_Break=Control: a cluster of its own, nothing joins it
// (Cc, Cf but the joiners, Zl, Zp).
bool breaks_grapheme(uint32_t c) {
    if (c == 0x2028 || c == 0x2029) return true;
    if (c == 0x200C || c == 0x200D) return false;
    const bool private_use = (c >= 0xE000 && c <= 0xF8FF) || c >= 0xF0000;
    if (private_use) return false;
    const CodepointSpan* end = kControlCharacters + kControlCharacterCount;
    const CodepointSpan* it =
        std::upper_bound(kControlCharacters, end, c, [](uint32_t v, const CodepointSpan& r) { return v < r.first; });
    return it != kControlCharacters && c <= (it - 1)->last;
}

}  // namespace

std::string PrecompiledCharsmap::normalize_graphemes(std::string_view text) const {
    std::vector<uint32_t> cpts;
    decode_utf8_lenient(std::string(text), cpts);
    std::string out;
    out.reserve(text.size());
    std::string cluster;
    std::vector<size_t> char_ends;  // in cluster
    for (size_t i = 0; i < cpts.size();) {
        cluster.clear();
        char_ends.clear();
        size_t j = i;
        do {
            utf8::append(cluster, cpts[j]);
            char_ends.push_back(cluster.size());
            ++j;
        } while (j < cpts.size() && ((!breaks_grapheme(cpts[i]) && extends_grapheme(cpts[j]) && !breaks_grapheme(cpts[j])) ||
                                     (cpts[i] == '\r' && cpts[j] == '\n' && j == i + 1)));
        i = j;
        size_t consumed = 0;
        std::string_view replacement;
        if (cluster.size() < 6 && find_prefix(cluster, 0, cluster.size(), true, consumed, replacement)) {
            out.append(replacement);
            continue;
        }
        size_t begin = 0;
        for (size_t end : char_ends) {
            if (find_prefix(cluster, begin, end, true, consumed, replacement)) {
                out.append(replacement);
            } else {
                out.append(cluster, begin, end - begin);
            }
            begin = end;
        }
    }
    return out;
}

}  // namespace vllm
