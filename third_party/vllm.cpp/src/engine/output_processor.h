// Per-request output side: incremental detokenization, stop strings,
// EOS / length finishing. Text is released in deltas that never split a
// UTF-8 code point and never contain the start of a stop string that a
// later token might complete (that tail is held back until it cannot).
#pragma once
#include <cstdint>
#include <string>

#include "sample/sampling_config.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

namespace finish_reason {
inline constexpr const char* kStop = "stop";
inline constexpr const char* kLength = "length";
inline constexpr const char* kAbort = "abort";
}  // namespace finish_reason

class OutputProcessor {
public:
    OutputProcessor(const Tokenizer& tokenizer, const SamplingConfig& config);

    struct Update {
        std::string delta;                    // text released by this token
        const char* finish_reason = nullptr;  // set when the request is finished
    };

    // Feeds the n-th generated token (n counts from 1). `at_length_limit`
    // says max_tokens or max_model_len is reached with this token.
    Update push(int32_t token, int32_t n, bool at_length_limit);
    // Ends the output for a reason outside the tokens (a structured-output
    // grammar that admits nothing more): releases all held text.
    Update finish(const char* finish_reason);

private:
    std::string release_all();

    const Tokenizer& tokenizer_;
    const SamplingConfig& config_;
    IncrementalDetokenizer detokenizer_;
    size_t max_stop_len_ = 0;
    std::string held_;  // decoded text not yet released
};

}  // namespace vllm
