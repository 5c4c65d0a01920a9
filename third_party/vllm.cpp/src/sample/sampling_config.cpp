#include "sample/sampling_config.h"

#include <algorithm>

#include "sample/sampling_fields.h"
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

// The struct's sampling fields as the JSON object read_sampling_fields
// takes (max_tokens <= 0, unbounded, and an unset seed left out), so they
// meet the same limits and error texts as a request body's.
json::Value sampling_fields(const vllm_sampling_params& p) {
    json::Value o = json::Value::object();
    o.set("temperature", double(p.temperature));
    o.set("top_p", double(p.top_p));
    o.set("top_k", int64_t(p.top_k));
    o.set("min_p", double(p.min_p));
    if (p.max_tokens > 0) o.set("max_tokens", int64_t(p.max_tokens));
    if (p.has_seed != 0) o.set("seed", static_cast<int64_t>(p.seed));  // read back as the same 64 bits
    o.set("presence_penalty", double(p.presence_penalty));
    o.set("frequency_penalty", double(p.frequency_penalty));
    o.set("repetition_penalty", double(p.repetition_penalty));
    o.set("min_tokens", int64_t(p.min_tokens));
    o.set("ignore_eos", p.ignore_eos != 0);
    json::Value stop = json::Value::array();
    for (int32_t i = 0; i < p.n_stop; ++i) {
        require(p.stop[i] != nullptr, "stop[" + std::to_string(i) + "] is NULL");
        stop.push_back(p.stop[i]);
    }
    o.set("stop", std::move(stop));
    return o;
}

}  // namespace

SamplingConfig SamplingConfig::from_c(const vllm_sampling_params& p, const structured::GrammarCompiler* compiler) {
    require(p.n_stop >= 0, "n_stop must be >= 0");
    require(p.n_stop == 0 || p.stop != nullptr, "stop is NULL but n_stop is " + std::to_string(p.n_stop));
    SamplingConfig c;
    c.max_tokens = 0;  // the struct's max_tokens <= 0: up to max_model_len
    read_sampling_fields(sampling_fields(p), c);

    const int n_structured = (p.structured_json != nullptr) + (p.structured_regex != nullptr) +
                             (p.structured_choice != nullptr || p.n_structured_choice != 0) +
                             (p.structured_grammar != nullptr) + (p.structured_json_object != 0);
    require(n_structured <= 1, "at most one structured-output constraint may be set (got " +
                                   std::to_string(n_structured) + ": structured_json, structured_regex, "
                                   "structured_choice, structured_grammar, structured_json_object)");
    require(p.structured_json_object == 0 || p.structured_json_object == 1,
            "structured_json_object must be 0 or 1 (got " + std::to_string(p.structured_json_object) + ")");
    c.logits_processor = p.logits_processor;
    c.logits_processor_user_data = p.logits_processor_user_data;
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
