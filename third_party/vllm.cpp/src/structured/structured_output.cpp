#include "structured/structured_output.h"

#include <algorithm>
#include <limits>

#include "structured/builtin_grammars.h"
#include "structured/gbnf_parser.h"
#include "structured/jump_forward.h"
#include "structured/json_schema.h"
#include "structured/regex.h"
#include "structured/token_mask.h"
#include "util/error.h"
#include "util/fault_injection.h"

namespace vllm::structured {

std::shared_ptr<const Grammar> compile_json_schema(std::string_view schema_json) {
    fault::maybe_fail(fault::Point::GrammarCompile);
    const std::string gbnf = json_schema_to_gbnf(schema_json);
    try {
        return parse_gbnf(gbnf);
    } catch (const Error& e) {
        // Left recursion through $ref, for one: name the schema, not the generated text.
        throw_invalid_argument(std::string("JSON schema: ") + e.what());
    }
}

std::shared_ptr<const Grammar> compile_regex(std::string_view pattern) {
    fault::maybe_fail(fault::Point::GrammarCompile);
    return parse_gbnf("root ::= " + regex_to_gbnf(pattern) + "\n");
}

std::shared_ptr<const Grammar> compile_choice(const std::vector<std::string>& choices) {
    fault::maybe_fail(fault::Point::GrammarCompile);
    return parse_gbnf(choice_gbnf(choices));
}

std::shared_ptr<const Grammar> compile_gbnf(std::string_view gbnf) {
    fault::maybe_fail(fault::Point::GrammarCompile);
    return parse_gbnf(gbnf);
}

std::shared_ptr<const Grammar> json_object_grammar() {
    static const std::shared_ptr<const Grammar> grammar = parse_gbnf(json_object_gbnf());
    return grammar;
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocabulary)
    : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)), states_(grammar_), state_(states_.initial()) {
    if (!vocabulary_) throw_invalid_argument("GrammarMatcher: no vocabulary");
}

int32_t GrammarMatcher::forced_token_of(int32_t state) const {
    auto found = forced_tokens_.find(state);
    if (found != forced_tokens_.end()) return found->second;
    const int32_t token = forced_first_token(*vocabulary_, states_, state);
    forced_tokens_.emplace(state, token);
    return token;
}

const std::vector<uint64_t>& GrammarMatcher::mask_of(int32_t state) const {
    auto found = masks_.find(state);
    if (found != masks_.end()) return found->second;
    std::vector<uint64_t> bits(vocabulary_->mask_words(), 0);
    const int32_t forced = forced_token_of(state);
    if (forced >= 0) {
        set_bit(bits, forced);
    } else {
        add_accepted_tokens(vocabulary_->trie(), states_, state, bits);
    }
    if (states_.can_end(state))
        for (int32_t id : vocabulary_->eog_ids())
            if (id >= 0 && id < vocabulary_->size()) set_bit(bits, id);
    return masks_.emplace(state, std::move(bits)).first->second;
}

void GrammarMatcher::prepare_mask() const {
    if (!ended_) mask_of(state_);
}

void GrammarMatcher::fill_allowed(std::vector<uint64_t>& bitset) const {
    if (ended_) {
        bitset.assign(vocabulary_->mask_words(), 0);
        return;
    }
    bitset = mask_of(state_);
}

void GrammarMatcher::apply_mask(float* logits, int32_t vocab_size) const {
    const float minus_inf = -std::numeric_limits<float>::infinity();
    const int32_t known = std::min(vocab_size, vocabulary_->size());
    if (ended_) {
        for (int32_t i = 0; i < vocab_size; ++i) logits[i] = minus_inf;
        return;
    }
    const std::vector<uint64_t>& bits = mask_of(state_);
    for (int32_t base = 0; base < known; base += 64) {
        const uint64_t word = bits[static_cast<size_t>(base) >> 6];
        if (word == ~uint64_t{0}) continue;
        const int32_t end = std::min(known, base + 64);
        for (int32_t i = base; i < end; ++i)
            if (!((word >> (i - base)) & 1)) logits[i] = minus_inf;
    }
    for (int32_t i = known; i < vocab_size; ++i) logits[i] = minus_inf;
}

bool GrammarMatcher::accept_token(int32_t id) {
    if (ended_ || id < 0 || id >= vocabulary_->size()) return false;
    if (vocabulary_->is_eog(id)) {
        if (!states_.can_end(state_)) return false;
        ended_ = true;
        return true;
    }
    const std::string_view bytes = vocabulary_->token_bytes(id);
    if (bytes.empty()) return false;
    return accept_bytes(bytes);
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
    if (ended_) return false;
    const int32_t next = states_.advance(state_, bytes);
    if (next == ParserStates::kDead) return false;
    state_ = next;
    bound_caches();
    return true;
}

void GrammarMatcher::bound_caches() {
    if (states_.state_count() > kMaxStates) {
        state_ = states_.compact(state_);
        masks_.clear();
        forced_tokens_.clear();
    } else if (masks_.size() > kMaxMasks) {
        masks_.clear();
    }
}

bool GrammarMatcher::can_end() const { return !ended_ && states_.can_end(state_); }

bool GrammarMatcher::is_finished() const {
    return ended_ || (states_.can_end(state_) && states_.allowed_bytes(state_).empty());
}

std::vector<int32_t> GrammarMatcher::jump_forward_tokens() const {
    std::vector<int32_t> tokens;
    if (ended_) return tokens;
    int32_t state = state_;
    // A grammar that never ends ("a" root) forces bytes forever: stop after a bounded run.
    size_t jumped = 0;
    for (int32_t token; jumped < kMaxForcedBytes && (token = forced_token_of(state)) >= 0;) {
        tokens.push_back(token);
        jumped += vocabulary_->token_bytes(token).size();
        state = states_.advance(state, vocabulary_->token_bytes(token));
    }
    return tokens;
}

std::string GrammarMatcher::forced_continuation() const { return ended_ ? std::string() : forced_bytes(states_, state_); }

}  // namespace vllm::structured
