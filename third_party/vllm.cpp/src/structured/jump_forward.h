// Jump-forward: where the grammar admits exactly one continuation, the
// tokens for it can be appended without sampling them one by one.
//
// The rule that keeps greedy output byte-identical with and without
// jump-forward: in a state whose forced bytes F (the bytes every
// continuation must start with) tokenize canonically into two or more
// tokens t1..tk, the mask allows t1 alone. Sampling then cannot pick
// anything else, so the engine may append t1 without sampling, and again
// from the state after it; jump-forward is exactly that repetition. The
// last token tk is never forced: its end is where free text begins, and the
// model may prefer a token that runs on past F. A sampler consuming random
// numbers is the only difference (skipped draws), which greedy decoding
// does not have.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "structured/parser_states.h"
#include "structured/vocabulary.h"

namespace vllm::structured {

constexpr size_t kMaxForcedBytes = 256;

// The bytes every continuation from `state` must start with (up to
// max_len, cut back to whole UTF-8 characters); empty where the grammar can
// end or branches.
std::string forced_bytes(ParserStates& states, int32_t state, size_t max_len = kMaxForcedBytes);

// t1 of the rule above, or -1 when the state forces fewer than two tokens.
int32_t forced_first_token(const Vocabulary& vocabulary, ParserStates& states, int32_t state);

}  // namespace vllm::structured
