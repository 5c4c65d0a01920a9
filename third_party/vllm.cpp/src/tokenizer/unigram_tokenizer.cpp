#include "tokenizer/unigram_tokenizer.h"

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "tokenizer/token_pieces.h"
#include "tokenizer/unicode.h"
#include "util/error.h"
#include "util/utf8.h"

namespace vllm {

namespace {

const std::string kMetaspace = "\xE2\x96\x81";  // U+2581
// SentencePiece's penalty under the lowest piece score for an unknown code point.
constexpr double kUnknownPenalty = 10.0;

void require_unknown_token(const TokenizerData& data) {
    if (data.unk_id < 0) throw_model_load("the Unigram tokenizer has no unknown token (unk_id / unknown_token_id)");
}

// llama.cpp's lattice: normal, user-defined (scored 0, so preferred) and
// unused pieces; the unknown score under the lowest normal one.
std::vector<std::string> gguf_pieces(const TokenizerData& d, std::vector<double>& scores, double& unk_score) {
    std::vector<std::string> pieces(d.tokens.size());
    scores.assign(d.tokens.size(), 0.0);
    float min_score = FLT_MAX;
    for (size_t id = 0; id < d.tokens.size(); ++id) {
        const auto type = static_cast<TokenType>(d.token_types[id]);
        const float score = d.scores.empty() ? 0.0f : d.scores[id];
        if (type == TokenType::NORMAL) min_score = std::min(min_score, score);
        if (type == TokenType::NORMAL || type == TokenType::USER_DEFINED || type == TokenType::UNUSED) {
            pieces[id] = d.tokens[id];
            scores[id] = type == TokenType::USER_DEFINED ? 0.0 : score;
        }
    }
    unk_score = static_cast<double>(min_score - static_cast<float>(kUnknownPenalty));
    return pieces;
}

std::vector<std::string> json_pieces(const TokenizerData& d, const std::vector<bool>& in_vocab,
                                     const std::vector<double>& scores, double& unk_score) {
    std::vector<std::string> pieces(d.tokens.size());
    double min_score = std::numeric_limits<double>::max();
    for (size_t id = 0; id < d.tokens.size() && id < in_vocab.size(); ++id) {
        if (!in_vocab[id]) continue;
        pieces[id] = d.tokens[id];
        min_score = std::min(min_score, scores[id]);
    }
    unk_score = min_score - kUnknownPenalty;
    return pieces;
}

struct Lattice {
    std::vector<double> scores;
    std::vector<size_t> starts;
    std::vector<int32_t> ids;
};

std::vector<double> padded(std::vector<double> scores, size_t n) {
    scores.resize(n, 0.0);
    return scores;
}

// 1e0 ... 1e308 as serde_json's table holds them (correctly rounded).
const std::vector<double>& powers_of_ten() {
    static const std::vector<double> table = [] {
        std::vector<double> t;
        for (int e = 0; e <= 308; ++e) t.push_back(std::strtod(("1e" + std::to_string(e)).c_str(), nullptr));
        return t;
    }();
    return table;
}

}  // namespace

double tokenizers_json_score(double nearest) {
    if (!std::isfinite(nearest)) return nearest;
    char text[64];
    const auto done = std::to_chars(text, text + sizeof(text), nearest);  // shortest round-trip form
    const std::string_view s(text, static_cast<size_t>(done.ptr - text));
    uint64_t significand = 0;
    int exponent = 0;
    bool fraction = false;
    size_t i = s[0] == '-' ? 1 : 0;
    for (; i < s.size() && s[i] != 'e'; ++i) {
        if (s[i] == '.') {
            fraction = true;
            continue;
        }
        significand = significand * 10 + static_cast<uint64_t>(s[i] - '0');  // at most 17 digits
        if (fraction) --exponent;
    }
    if (i < s.size()) exponent += std::atoi(std::string(s.substr(i + 1)).c_str());
    double f = static_cast<double>(significand);
    const std::vector<double>& pow10 = powers_of_ten();
    while (exponent < -308 && f != 0.0) {
        f /= pow10[308];
        exponent += 308;
    }
    if (exponent >= 0) {
        f *= exponent <= 308 ? pow10[static_cast<size_t>(exponent)] : HUGE_VAL;
    } else if (exponent >= -308) {
        f /= pow10[static_cast<size_t>(-exponent)];
    }
    return s[0] == '-' ? -f : f;
}

UnigramModel::UnigramModel(const std::vector<std::string>& pieces, const std::vector<double>& scores, int32_t unk_id,
                           double unk_score)
    : scores_(padded(scores, pieces.size())), unk_id_(unk_id), unk_score_(unk_score) {
    ids_.reserve(pieces.size());
    for (size_t id = 0; id < pieces.size(); ++id) {
        if (pieces[id].empty()) continue;
        ids_[pieces[id]] = static_cast<int32_t>(id);  // a repeated text: the last id, as both references keep it
        max_piece_bytes_ = std::max(max_piece_bytes_, pieces[id].size());
    }
}

void UnigramModel::encode(std::string_view text, std::vector<int32_t>& out) const {
    const size_t n = text.size();
    if (n == 0) return;
    // best[i]: the best cut of text[0, i): its score, the last piece's start and id.
    Lattice best{std::vector<double>(n + 1, -DBL_MAX), std::vector<size_t>(n + 1, 0), std::vector<int32_t>(n + 1, unk_id_)};
    best.scores[0] = 0.0;
    std::string key;
    for (size_t start = 0; start < n;) {
        const size_t char_len = std::min(utf8_sequence_length(static_cast<unsigned char>(text[start])), n - start);
        const double here = best.scores[start];
        bool single_char_piece = false;
        const size_t longest = std::min(n - start, max_piece_bytes_);
        // Shorter pieces first: on equal scores the first one stays.
        for (size_t len = 1; len <= longest; ++len) {
            key.assign(text.substr(start, len));
            auto it = ids_.find(key);
            if (it == ids_.end()) continue;
            if (len == char_len) single_char_piece = true;
            const double candidate = here + scores_[it->second];
            if (candidate > best.scores[start + len]) {
                best.scores[start + len] = candidate;
                best.starts[start + len] = start;
                best.ids[start + len] = it->second;
            }
        }
        if (!single_char_piece) {
            const double candidate = here + unk_score_;
            if (candidate > best.scores[start + char_len]) {
                best.scores[start + char_len] = candidate;
                best.starts[start + char_len] = start;
                best.ids[start + char_len] = unk_id_;
            }
        }
        start += char_len;
    }
    const size_t first = out.size();
    bool previous_unknown = false;
    for (size_t end = n; end > 0; end = best.starts[end]) {
        const bool unknown = best.ids[end] == unk_id_;
        if (!(unknown && previous_unknown)) out.push_back(best.ids[end]);
        previous_unknown = unknown;
    }
    std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

UnigramTokenizer::UnigramTokenizer(TokenizerData data)
    : Tokenizer(std::move(data)), from_gguf_(true), charsmap_(data_.precompiled_charsmap), model_([this] {
          require_unknown_token(data_);
          std::vector<double> scores;
          double unk_score = 0;
          std::vector<std::string> pieces = gguf_pieces(data_, scores, unk_score);
          return UnigramModel(pieces, scores, data_.unk_id, unk_score);
      }()) {
    set_pieces(metaspace_to_spaces);
}

UnigramTokenizer::UnigramTokenizer(TokenizerData data, AddedVocabulary added, const std::vector<double>& scores,
                                   const std::vector<bool>& in_vocab, const UnigramWordOptions& words)
    : Tokenizer(std::move(data), std::move(added)), from_gguf_(false), words_(words), model_([&] {
          require_unknown_token(data_);
          double unk_score = 0;
          std::vector<std::string> pieces = json_pieces(data_, in_vocab, scores, unk_score);
          return UnigramModel(pieces, scores, data_.unk_id, unk_score);
      }()) {
    set_pieces(metaspace_to_spaces);
}

std::string UnigramTokenizer::normalize_gguf(const std::string& text) const {
    // llama.cpp's llm_tokenizer_ugm_session::normalize: each normalized
    // space is "▁" (escape_whitespaces); with remove_extra_whitespaces a run
    // of spaces becomes one "▁" before the next word (none at the end), and
    // add_space_prefix puts one before the first word.
    const std::string normalized = charsmap_.normalize(text);
    const std::string space = data_.escape_whitespaces ? kMetaspace : " ";
    const bool merge = data_.remove_extra_whitespaces;
    std::string out;
    out.reserve(normalized.size() * 3);
    bool prepended = false;
    bool in_word = false;
    for (char c : normalized) {
        if (c != ' ') {
            if (!in_word) {
                in_word = true;
                if ((data_.add_space_prefix && !prepended) || merge) {
                    out += space;
                    prepended = true;
                }
            }
            out.push_back(c);
        } else {
            in_word = false;
            if (!merge) out += space;
        }
    }
    return out;
}

void UnigramTokenizer::encode_text(const std::string& text, bool at_start, std::vector<int32_t>& out) const {
    if (from_gguf_) {
        model_.encode(normalize_gguf(text), out);
        return;
    }
    std::vector<std::string> chunks;
    if (words_.whitespace_split) {
        std::vector<uint32_t> cpts;
        decode_utf8_lenient(text, cpts);
        std::string word;
        for (uint32_t c : cpts) {
            if ((codepoint_class(c) & kClassWhitespace) != 0) {
                if (!word.empty()) chunks.push_back(std::move(word));
                word.clear();
            } else {
                utf8::append(word, c);
            }
        }
        if (!word.empty()) chunks.push_back(std::move(word));
    } else if (!text.empty()) {
        chunks.push_back(text);
    }
    const MetaspaceOptions& m = words_.metaspace;
    for (size_t i = 0; i < chunks.size(); ++i) {
        std::string chunk = spaces_to_metaspace(chunks[i]);
        // "first": only the first pre-token of the input.
        const bool prepend = m.prepend == MetaspaceOptions::Prepend::ALWAYS ||
                             (m.prepend == MetaspaceOptions::Prepend::FIRST && at_start && i == 0);
        if (prepend && chunk.compare(0, kMetaspace.size(), kMetaspace) != 0) chunk = kMetaspace + chunk;
        if (!m.split) {
            model_.encode(chunk, out);
            continue;
        }
        size_t begin = 0;
        for (size_t next = chunk.find(kMetaspace, 1); next != std::string::npos; next = chunk.find(kMetaspace, next + 1)) {
            model_.encode(std::string_view(chunk).substr(begin, next - begin), out);
            begin = next;
        }
        model_.encode(std::string_view(chunk).substr(begin), out);
    }
}

}  // namespace vllm
