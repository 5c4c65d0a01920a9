#include "tokenizer/added_vocabulary.h"

#include <algorithm>

#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace vllm {

namespace {

// The class bits of the code point starting at s[pos], and its length; an
// ill-formed byte is one byte of no class.
uint8_t class_after(std::string_view s, size_t pos, size_t& length) {
    length = utf8::sequence_length(s, pos);
    if (length == 0) {
        length = 1;
        return 0;
    }
    size_t i = pos;
    return codepoint_class(utf8::decode(s, i));
}

// The same for the code point ending at s[pos - 1].
uint8_t class_before(std::string_view s, size_t pos, size_t& length) {
    for (size_t back = 1; back <= 4 && back <= pos; ++back) {
        const size_t begin = pos - back;
        if (utf8::sequence_length(s, begin) == back) return class_after(s, begin, length);
        if ((static_cast<unsigned char>(s[begin]) & 0xC0) != 0x80) break;
    }
    length = 1;
    return 0;
}

}  // namespace

AddedVocabulary::Matcher::Matcher() : nodes_(1) {}

void AddedVocabulary::Matcher::add(const std::string& pattern, uint32_t token_index) {
    uint32_t node = 0;
    for (unsigned char byte : pattern) {
        auto& children = nodes_[node].children;
        auto it = std::lower_bound(children.begin(), children.end(), byte,
                                   [](const std::pair<uint8_t, uint32_t>& c, uint8_t b) { return c.first < b; });
        if (it != children.end() && it->first == byte) {
            node = it->second;
            continue;
        }
        const auto child = static_cast<uint32_t>(nodes_.size());
        children.insert(it, {byte, child});
        nodes_.emplace_back();
        node = child;
    }
    // Of equal texts the first added wins, as in an Aho-Corasick automaton.
    if (node != 0 && nodes_[node].token_index < 0) nodes_[node].token_index = token_index;
}

int64_t AddedVocabulary::Matcher::longest_at(std::string_view text, size_t pos, size_t& length) const {
    int64_t best = -1;
    uint32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
        const auto& children = nodes_[node].children;
        const auto byte = static_cast<uint8_t>(text[i]);
        auto it = std::lower_bound(children.begin(), children.end(), byte,
                                   [](const std::pair<uint8_t, uint32_t>& c, uint8_t b) { return c.first < b; });
        if (it == children.end() || it->first != byte) break;
        node = it->second;
        if (nodes_[node].token_index >= 0) {
            best = nodes_[node].token_index;
            length = i + 1 - pos;
        }
    }
    return best;
}

AddedVocabulary::AddedVocabulary(const std::vector<AddedToken>& tokens, HfNormalizer normalizer)
    : normalizer_(std::move(normalizer)) {
    for (const bool special : {true, false}) {
        for (const AddedToken& t : tokens) {
            if (t.special != special || t.content.empty()) continue;
            const auto index = static_cast<uint32_t>(tokens_.size());
            tokens_.push_back(t);
            if (t.normalized) {
                normalized_.add(normalizer_.apply(t.content), index);
            } else {
                raw_.add(t.content, index);
            }
        }
    }
}

void AddedVocabulary::find_matches(std::string_view sentence, const Matcher& matcher, bool parse_special,
                                   std::vector<Span>& out) const {
    out.clear();
    size_t start_offset = 0;
    size_t pos = 0;
    while (pos < sentence.size()) {
        size_t length = 0;
        const int64_t index = matcher.longest_at(sentence, pos, length);
        if (index < 0) {
            ++pos;
            continue;
        }
        const AddedToken& token = tokens_[static_cast<size_t>(index)];
        size_t start = pos;
        size_t stop = pos + length;
        // The next search starts after this match even when it is dropped
        // or its strip reaches further, as tokenizers' find_iter does.
        pos = stop;
        if (token.special && !parse_special) continue;
        size_t n = 0;
        if (token.single_word && ((start > 0 && (class_before(sentence, start, n) & kClassWord)) ||
                                  (stop < sentence.size() && (class_after(sentence, stop, n) & kClassWord)))) {
            continue;
        }
        if (token.lstrip) {
            size_t left = start;
            while (left > 0 && (class_before(sentence, left, n) & kClassWhitespace)) left -= n;
            // Spaces a previous match took stay with it.
            start = std::max(left, start_offset);
        }
        if (token.rstrip) {
            while (stop < sentence.size() && (class_after(sentence, stop, n) & kClassWhitespace)) stop += n;
        }
        if (start_offset < start) out.push_back({-1, start_offset, start});
        out.push_back({token.id, start, stop});
        start_offset = stop;
    }
    if (start_offset < sentence.size()) out.push_back({-1, start_offset, sentence.size()});
}

void AddedVocabulary::split(const std::string& text, bool parse_special, std::vector<AddedTokenPiece>& out) const {
    out.clear();
    std::vector<Span> raw_spans;
    std::vector<Span> spans;
    find_matches(text, raw_, parse_special, raw_spans);
    for (const Span& r : raw_spans) {
        if (r.token >= 0) {
            out.push_back({r.token, "", false});
            continue;
        }
        const std::string normalized = normalizer_.apply(text.substr(r.begin, r.end - r.begin));
        find_matches(normalized, normalized_, parse_special, spans);
        for (const Span& s : spans) {
            if (s.token >= 0) {
                out.push_back({s.token, "", false});
            } else {
                out.push_back({-1, normalized.substr(s.begin, s.end - s.begin), r.begin == 0 && s.begin == 0});
            }
        }
    }
}

}  // namespace vllm
