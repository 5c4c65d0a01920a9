#include "sample/sampling_config.h"

#include <algorithm>
#include <cmath>

#include "structured/grammar_compiler.h"
#include "structured/structured_output.h"
#include "util/error.h"

namespace vllm {

namespace {
void require(bool ok, const std::string& message) {
    if (!ok) throw_invalid_argument(message);
}

// The one structured-output constraint set in `p` (checked: at most one),
// compiled; nullptr when there is none.
std::shared_ptr<const structured::Grammar> compile_constraint(const vllm_sampling_params& p,
                                                             const structured::GrammarCompiler* compiler) {
    using structured::ConstraintKind;
    if (p.structured_json != nullptr) return compile_text(compiler, ConstraintKind::JsonSchema, p.structured_json);
    if (p.structured_regex != nullptr) return compile_text(compiler, ConstraintKind::Regex, p.structured_regex);
    if (p.structured_grammar != nullptr) return compile_text(compiler, ConstraintKind::Gbnf, p.structured_grammar);
    if (p.structured_json_object != 0) return structured::json_object_grammar();
    if (p.structured_choice == nullptr && p.n_structured_choice == 0) return nullptr;
    require(p.structured_choice != nullptr, "structured_choice is NULL but n_structured_choice is " +
                                                std::to_string(p.n_structured_choice));
    require(p.n_structured_choice > 0, "structured_choice is an empty list (n_structured_choice is " +
                                           std::to_string(p.n_structured_choice) + ")");
    std::vector<std::string> choices;
    for (int32_t i = 0; i < p.n_structured_choice; ++i) {
        require(p.structured_choice[i] != nullptr, "structured_choice[" + std::to_string(i) + "] is NULL");
        choices.emplace_back(p.structured_choice[i]);
    }
    return structured::compile_choices(compiler, choices);
}

}  // namespace

SamplingConfig SamplingConfig::from_c(const vllm_sampling_params& p, const structured::GrammarCompiler* compiler) {
    require(std::isfinite(p.temperature) && p.temperature >= 0.0f,
            "temperature must be a finite number >= 0 (got " + std::to_string(p.temperature) + ")");
    require(std::isfinite(p.top_p) && p.top_p > 0.0f && p.top_p <= 1.0f,
            "top_p must be in (0, 1] (got " + std::to_string(p.top_p) + ")");
    require(p.top_k >= -1, "top_k must be -1, 0 (all tokens) or positive (got " + std::to_string(p.top_k) + ")");
    require(std::isfinite(p.min_p) && p.min_p >= 0.0f && p.min_p <= 1.0f,
            "min_p must be in [0, 1] (got " + std::to_string(p.min_p) + ")");
    require(std::isfinite(p.repetition_penalty) && p.repetition_penalty > 0.0f,
            "repetition_penalty must be > 0 (got " + std::to_string(p.repetition_penalty) + ")");
    require(std::isfinite(p.presence_penalty) && p.presence_penalty >= -2.0f && p.presence_penalty <= 2.0f,
            "presence_penalty must be in [-2, 2] (got " + std::to_string(p.presence_penalty) + ")");
    require(std::isfinite(p.frequency_penalty) && p.frequency_penalty >= -2.0f && p.frequency_penalty <= 2.0f,
            "frequency_penalty must be in [-2, 2] (got " + std::to_string(p.frequency_penalty) + ")");
    require(p.min_tokens >= 0, "min_tokens must be >= 0 (got " + std::to_string(p.min_tokens) + ")");
    require(p.max_tokens <= 0 || p.min_tokens <= p.max_tokens,
            "min_tokens (" + std::to_string(p.min_tokens) + ") must not exceed max_tokens (" + std::to_string(p.max_tokens) + ")");
    require(p.n_stop >= 0, "n_stop must be >= 0");
    require(p.n_stop == 0 || p.stop != nullptr, "stop is NULL but n_stop is " + std::to_string(p.n_stop));

    const int n_structured = (p.structured_json != nullptr) + (p.structured_regex != nullptr) +
                             (p.structured_choice != nullptr || p.n_structured_choice != 0) +
                             (p.structured_grammar != nullptr) + (p.structured_json_object != 0);
    require(n_structured <= 1, "at most one structured-output constraint may be set (got " +
                                   std::to_string(n_structured) + ": structured_json, structured_regex, "
                                   "structured_choice, structured_grammar, structured_json_object)");
    require(p.structured_json_object == 0 || p.structured_json_object == 1,
            "structured_json_object must be 0 or 1 (got " + std::to_string(p.structured_json_object) + ")");
    SamplingConfig c;
    c.temperature = p.temperature;
    c.top_p = p.top_p;
    c.top_k = p.top_k < 0 ? 0 : p.top_k;
    c.min_p = p.min_p;
    c.max_tokens = p.max_tokens;
    c.has_seed = p.has_seed != 0;
    c.seed = p.seed;
    c.presence_penalty = p.presence_penalty;
    c.frequency_penalty = p.frequency_penalty;
    c.repetition_penalty = p.repetition_penalty;
    c.min_tokens = p.min_tokens;
    c.ignore_eos = p.ignore_eos != 0;
    c.logits_processor = p.logits_processor;
    c.logits_processor_user_data = p.logits_processor_user_data;
    for (int32_t i = 0; i < p.n_stop; ++i) {
        require(p.stop[i] != nullptr, "stop[" + std::to_string(i) + "] is NULL");
        require(p.stop[i][0] != '\0', "stop[" + std::to_string(i) + "] is an empty string");
        c.stop.emplace_back(p.stop[i]);
    }
    c.grammar = compile_constraint(p, compiler);
    return c;
}

void SamplingConfig::truncate_prompt(std::vector<int32_t>& prompt) const {
    if (truncate_prompt_tokens > 0 && prompt.size() > static_cast<size_t>(truncate_prompt_tokens))
        prompt.erase(prompt.begin(), prompt.end() - truncate_prompt_tokens);
}

bool SamplingConfig::is_stop_token(int32_t token) const {
    return std::binary_search(stop_token_ids.begin(), stop_token_ids.end(), token);
}

void SamplingConfig::check_vocabulary(int32_t vocab_size) const {
    if (logit_adjustments) logit_adjustments->check_vocabulary(vocab_size);
    if (!stop_token_ids.empty()) check_token_id(stop_token_ids.back(), vocab_size, "stop_token_ids");
}

}  // namespace vllm
