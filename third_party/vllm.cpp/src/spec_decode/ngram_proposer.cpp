#include "spec_decode/ngram_proposer.h"

#include <algorithm>

namespace vllm {

void NgramProposer::propose(uint64_t, const std::vector<int32_t>& tokens, int, int max_tokens,
                            std::vector<int32_t>& draft) {
    draft.clear();
    const int n = static_cast<int>(tokens.size());
    if (max_tokens <= 0 || n < min_n_ + 1) return;
    // One backward scan: for every earlier end position j, how many tokens
    // before it equal the sequence's last ones (capped at max_n). The latest
    // occurrence of the longest match wins: recent text predicts best.
    int best_len = 0, best_end = -1;
    for (int j = n - 2; j >= 0; --j) {
        int len = 0;
        while (len < max_n_ && len <= j && tokens[j - len] == tokens[n - 1 - len]) ++len;
        if (len > best_len) {
            best_len = len;
            best_end = j;
            if (len == max_n_) break;
        }
    }
    if (best_len < min_n_) return;
    // The continuation may run into the matched text itself (a repetition).
    const int take = std::min(max_tokens, n - 1 - best_end);
    draft.assign(tokens.begin() + best_end + 1, tokens.begin() + best_end + 1 + take);
}

}  // namespace vllm
