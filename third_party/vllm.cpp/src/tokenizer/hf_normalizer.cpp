#include "tokenizer/hf_normalizer.h"

#include <algorithm>

#include "tokenizer/nfc.h"
#include "tokenizer/token_pieces.h"
#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace vllm {

bool HfNormalizer::has(Step step) const { return std::find(steps_.begin(), steps_.end(), step) != steps_.end(); }

std::string HfNormalizer::apply(const std::string& text) const {
    std::string out = text;
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
        }
    }
    return out;
}

}  // namespace vllm
