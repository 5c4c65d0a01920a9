#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace vllm {

SpecialTokenSplitter::SpecialTokenSplitter(const std::vector<std::string>& tokens, const std::vector<int32_t>& types) {
    for (size_t id = 0; id < tokens.size(); ++id) {
        const auto type = static_cast<TokenType>(types[id]);
        const bool control = type == TokenType::CONTROL || type == TokenType::UNKNOWN;
        if ((control || type == TokenType::USER_DEFINED) && !tokens[id].empty()) {
            specials_.push_back({static_cast<int32_t>(id), tokens[id], control});
        }
    }
    // Ties in length keep id order (llama.cpp's unstable sort leaves them
    // unspecified).
    std::stable_sort(specials_.begin(), specials_.end(),
                     [](const Special& a, const Special& b) { return a.text.size() > b.text.size(); });
}

void SpecialTokenSplitter::split(const std::string& text, bool parse_special, std::vector<Fragment>& out) const {
    out.clear();
    if (text.empty()) return;
    out.push_back({-1, 0, static_cast<uint32_t>(text.size())});
    std::vector<Fragment> next;
    for (const Special& special : specials_) {
        if (special.needs_parse_special && !parse_special) continue;
        bool found = false;
        next.clear();
        for (const Fragment& f : out) {
            if (f.token >= 0) {
                next.push_back(f);
                continue;
            }
            // Search only inside the fragment: a match may not straddle a
            // special token cut out before.
            const std::string_view window(text.data(), f.end);
            uint32_t pos = f.begin;
            for (;;) {
                const size_t match = window.find(special.text, pos);
                if (match == std::string_view::npos) break;
                found = true;
                if (match > pos) next.push_back({-1, pos, static_cast<uint32_t>(match)});
                next.push_back({special.id, 0, 0});
                pos = static_cast<uint32_t>(match + special.text.size());
            }
            if (pos < f.end) next.push_back({-1, pos, f.end});
        }
        if (found) out.swap(next);
    }
}

}  // namespace vllm
