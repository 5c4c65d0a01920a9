// Structured output: the facade the engine uses.
//
//   Vocabulary vocab(tokenizer);                     // once per engine, shared
//   auto grammar = compile_json_schema(schema);      // once per constraint, shared
//   GrammarMatcher m(grammar, vocab);                // once per request
//   per decode step:  m.apply_mask(logits, n_vocab); sample; m.accept_token(id);
//
// Every compile_* returns an immutable Grammar (shareable by requests and
// threads) or throws INVALID_ARGUMENT naming the problem (the construct and
// position, the unsupported schema keyword, ...).
//
// Masks: a token is allowed iff the grammar accepts all of its bytes from
// the current state; end-of-generation tokens are allowed iff can_end();
// control tokens never. Exception (see jump_forward.h): where the grammar
// forces bytes that tokenize into two or more tokens, only the first of
// those tokens is allowed, which is what makes jump-forward exact.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "structured/grammar.h"
#include "structured/parser_states.h"
#include "structured/vocabulary.h"

namespace vllm::structured {

// JSON Schema (see json_schema.h for the keywords supported).
std::shared_ptr<const Grammar> compile_json_schema(std::string_view schema_json);
// A regular expression, matched against the whole output (Python's re.fullmatch).
std::shared_ptr<const Grammar> compile_regex(std::string_view pattern);
// Exactly one of the strings; INVALID_ARGUMENT for an empty list.
std::shared_ptr<const Grammar> compile_choice(const std::vector<std::string>& choices);
// GBNF text; the start rule is "root".
std::shared_ptr<const Grammar> compile_gbnf(std::string_view gbnf);
// Any JSON object (whitespace between tokens bounded).
std::shared_ptr<const Grammar> json_object_grammar();

// Per-request matcher state. Not thread-safe: one request, one thread at a
// time. Its caches (parser states, masks per state) grow with the distinct
// states it visits and are dropped past a bound.
class GrammarMatcher {
public:
    GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocabulary);

    // Computes the mask of the current state now (the work fill_allowed and
    // apply_mask would do), so that they only read it; under a WorkDeadline
    // it may stop with DeadlinePassed, keeping what it computed.
    void prepare_mask() const;
    // The current state's mask is computed (or nothing more is allowed).
    bool mask_ready() const { return ended_ || masks_.count(state_) != 0; }

    // bitset: resized to Vocabulary::mask_words() words; bit id set iff allowed.
    void fill_allowed(std::vector<uint64_t>& bitset) const;
    // logits[0..vocab_size): disallowed ones (and ids past the vocabulary) to -inf.
    void apply_mask(float* logits, int32_t vocab_size) const;

    // Advances by a token's bytes. False (state unchanged) when the grammar
    // rejects them, for control tokens, ids out of range, an EOG token
    // where the grammar cannot end, and anything after an accepted EOG.
    // Accepts every token the grammar accepts, also where the mask narrowed
    // a forced run to its canonical first token.
    bool accept_token(int32_t id);
    // Advances by raw bytes (tests, tools); false (state unchanged) if rejected.
    bool accept_bytes(std::string_view bytes);

    bool can_end() const;      // the output so far is complete for the grammar
    bool is_finished() const;  // nothing but the end is possible (or EOG was accepted)

    // The tokens the mask would force one after another from here (the
    // canonical tokenization of the forced bytes, its last token held back);
    // empty if none. accept_token() each of them, then prefill them.
    std::vector<int32_t> jump_forward_tokens() const;

    // The bytes every continuation must start with (diagnostics, tests).
    std::string forced_continuation() const;

private:
    const std::vector<uint64_t>& mask_of(int32_t state) const;
    int32_t forced_token_of(int32_t state) const;
    void bound_caches();

    // States and cached masks kept before the caches are dropped.
    static constexpr size_t kMaxStates = 4096;
    static constexpr size_t kMaxMasks = 512;

    std::shared_ptr<const Grammar> grammar_;
    std::shared_ptr<const Vocabulary> vocabulary_;
    mutable ParserStates states_;
    int32_t state_;
    bool ended_ = false;
    mutable std::unordered_map<int32_t, std::vector<uint64_t>> masks_;
    mutable std::unordered_map<int32_t, int32_t> forced_tokens_;
};

}  // namespace vllm::structured
