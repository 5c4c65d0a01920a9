// Where a request's output leaves its reasoning section (structured output
// after thinking, vLLM's rule): the grammar is held back while the output is
// still inside the section and applies from the token that completes its end
// marker; the end is found in the generated tokens' text, so a marker the
// model writes as several ordinary tokens counts as well as a special token.
// With a token budget (vLLM's thinking_token_budget) the gate then forces
// the marker's tokens one step at a time once that many tokens were
// generated inside, as llama.cpp's reasoning-budget sampler does. A section
// the model opens itself (section.start_markers) begins, and its budget
// counts, from the token that completes one of them; it opens once.
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
    // set (and no start marker: then from the first start marker); never
    // inside otherwise (every call below then does nothing).
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
    // Before the section: whether the output so far completes a start
    // marker; then tail_ keeps only the text after it.
    bool opens(std::string_view text);
    // Whether tail_ holds one of `markers`: then tail_ keeps what follows
    // it; else only the bytes where one completed later may start.
    bool take_marker(const std::vector<std::string>& markers);
    // Inside: whether tail_ completes the end marker (then the section is over).
    bool ends();

    std::vector<std::string> end_markers_;    // the end marker and its other spellings
    std::vector<std::string> start_markers_;  // cleared once the section opens
    std::vector<int32_t> forced_ids_;
    int32_t budget_;
    bool inside_;
    int32_t tokens_inside_ = 0;
    size_t forced_next_ = 0;
    // The output's last bytes, where a marker cut across tokens is completed.
    std::string tail_;
};

}  // namespace vllm
