// Where a request's output leaves its reasoning section (structured output
// after thinking, vLLM's rule): the grammar is held back while the output is
// still inside the section and applies from the token that completes its end
// marker; the end is found in the generated tokens' text, so a marker the
// model writes as several ordinary tokens counts as well as a special token.
// With a token budget (vLLM's thinking_token_budget) the gate then forces
// the marker's tokens one step at a time once that many tokens were
// generated inside, as llama.cpp's reasoning-budget sampler does.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sample/sampling_config.h"

namespace vllm {

class Tokenizer;

class ReasoningGate {
public:
    // Inside the section from the first token when section.end_marker is
    // set; never inside otherwise (every call below then does nothing).
    ReasoningGate(const SamplingConfig::ReasoningSection& section, const Tokenizer& tokenizer);

    bool inside() const { return inside_; }
    // Leaves only the token the budget forces next possible in
    // logits[0..vocab) (its own value kept, or 0 when a mask took it);
    // nothing while the budget lasts.
    void force(float* logits, int32_t vocab) const;
    // One appended token and its text (special tokens' text included).
    void accept(int32_t token, std::string_view text);

private:
    bool forcing() const { return budget_ >= 0 && tokens_inside_ >= budget_; }

    std::string end_marker_;
    std::vector<int32_t> forced_ids_;
    int32_t budget_;
    bool inside_;
    int32_t tokens_inside_ = 0;
    size_t forced_next_ = 0;
    // The output's last bytes, where a marker cut across tokens is completed.
    std::string tail_;
};

}  // namespace vllm
