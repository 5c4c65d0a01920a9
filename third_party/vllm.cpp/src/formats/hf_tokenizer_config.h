// The tokenizer and generation settings of a Hugging Face model directory
// beside tokenizer.json: tokenizer_config.json (chat template, bos/eos
// token texts, add_bos_token / add_eos_token), chat_template.jinja, and
// generation_config.json (the end-of-generation ids, one or a list).
//
// Which chat template wins: the override file's (EngineConfig /
// vllm_model_params tokenizer_config_path, which replaces the directory's
// tokenizer_config.json) when it has one, else chat_template.jinja, else
// the directory's tokenizer_config.json — transformers' order, with an
// explicit override first.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vllm {

struct HfTokenizerConfig {
    std::string chat_template;  // "" when the model has none
    std::string bos_token;      // token texts; "" when unset
    std::string eos_token;
    std::optional<bool> add_bos_token;  // unset: the tokenizer.json post-processor decides
    std::optional<bool> add_eos_token;
    std::vector<int32_t> eos_token_ids;  // generation_config.json eos_token_id; every one ends generation

    // `override_path` "" reads <dir>/tokenizer_config.json (absent: all
    // defaults); a given path must exist. MODEL_LOAD error naming the file
    // and the field otherwise.
    static HfTokenizerConfig load(const std::string& dir, const std::string& override_path);
};

}  // namespace vllm
