#include "tokenizer/hf_normalizer.h"

#include <algorithm>

#include "tokenizer/nfc.h"
#include "tokenizer/token_pieces.h"
#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace vllm {

bool HfNormalizer::has(Step step) const { return std::find(steps_.begin(), steps_.end(), step) != steps_.end(); }

namespace {

std::string replace_all(const std::string& text, const std::string& from, const std::string& to) {
    if (from.empty()) return text;
    std::string out;
    size_t begin = 0;
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, begin)) {
        out.append(text, begin, at - begin).append(to);
        begin = at + from.size();
    }
    return out.append(text, begin, std::string::npos);
}

// Each run of two or more spaces becomes `to`.
std::string collapse_spaces(const std::string& text, const std::string& to) {
    std::string out;
    for (size_t i = 0; i < text.size();) {
        size_t run = 0;
        while (i + run < text.size() && text[i + run] == ' ') ++run;
        if (run >= 2) {
            out += to;
        } else if (run == 1) {
            out.push_back(' ');
        } else {
            out.push_back(text[i]);
            run = 1;
        }
        i += run;
    }
    return out;
}

}  // namespace

std::string HfNormalizer::apply(const std::string& text) const {
    std::string out = text;
    size_t literal = 0;
    for (Step step : steps_) {
        switch (step) {
            case Step::NFC: {
                std::vector<uint32_t> cpts;
                decode_utf8_lenient(out, cpts);
                nfc_normalize(cpts);
                out.clear();
                for (uint32_t c : cpts) utf8::append(out, c);
                break;
            }
            case Step::PREPEND_METASPACE:
                if (!out.empty()) out = "\xE2\x96\x81" + out;
                break;
            case Step::REPLACE_SPACES:
                out = spaces_to_metaspace(out);
                break;
            case Step::BERT:
                out = bert_normalize(out, bert_);
                break;
            case Step::PRECOMPILED:
                out = charsmap_->normalize_graphemes(out);
                break;
            case Step::REPLACE_LITERAL:
                out = replace_all(out, literals_[literal].first, literals_[literal].second);
                ++literal;
                break;
            case Step::COLLAPSE_SPACES:
                out = collapse_spaces(out, collapsed_to_);
                break;
        }
    }
    return out;
}

}  // namespace vllm
