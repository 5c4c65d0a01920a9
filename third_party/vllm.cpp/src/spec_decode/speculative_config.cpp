#include "spec_decode/speculative_config.h"

#include <sys/stat.h>

#include <algorithm>

#include "util/error.h"
#include "util/json_fields.h"
#include "util/json.h"

namespace vllm {

namespace {

constexpr const char* kKnownFields =
    "method, model, num_speculative_tokens, draft_vocab_size, draft_confidence_threshold, prompt_lookup_min, "
    "prompt_lookup_max, suffix_decoding_max_tree_depth, suffix_decoding_max_cached_requests, "
    "suffix_decoding_max_spec_factor, suffix_decoding_min_token_prob, disable_by_batch_size, rejection_sample_method";

[[noreturn]] void refuse(const std::string& field, const std::string& what) {
    throw_invalid_argument("speculative_config: '" + field + "' " + what);
}

int64_t read_int(const std::string& field, const json::Value& v, int64_t lo, int64_t hi) {
    if (!v.is_int() || v.as_int() < lo || v.as_int() > hi)
        refuse(field, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + " (got " +
                          json::dump(v) + ")");
    return v.as_int();
}

double read_number(const std::string& field, const json::Value& v, double lo, double hi) {
    if (!v.is_number() || v.as_double() < lo || v.as_double() > hi)
        refuse(field, "must be a number from " + json::format_float(lo) + " to " + json::format_float(hi) +
                          " (got " + json::dump(v) + ")");
    return v.as_double();
}

const std::string& read_string(const std::string& field, const json::Value& v) {
    if (!v.is_string()) refuse(field, "must be a string (got " + json::dump(v) + ")");
    return v.as_string();
}

bool path_exists(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

const char* method_name(SpeculativeMethod method) {
    switch (method) {
        case SpeculativeMethod::NGRAM: return "ngram";
        case SpeculativeMethod::SUFFIX: return "suffix";
        case SpeculativeMethod::DRAFT_MODEL: return "draft_model";
    }
    return "?";
}

SpeculativeConfig SpeculativeConfig::parse(std::string_view json_text) {
    const json::Value root = json::parse_object(json_text, "speculative_config");

    SpeculativeConfig c;
    std::string method, model;
    bool has_num_tokens = false, has_min = false, has_max = false, has_confidence = false;
    for (const auto& [key, value] : root.members()) {
        if (value.is_null()) continue;  // vLLM's None: the default
        if (key == "method") {
            method = read_string(key, value);
        } else if (key == "model") {
            model = read_string(key, value);
        } else if (key == "draft_vocab_size") {
            c.draft_vocab_size = static_cast<int>(read_int(key, value, 0, 1 << 30));
        } else if (key == "draft_confidence_threshold") {
            c.draft_confidence_threshold = read_number(key, value, 0.0, 1.0);
            has_confidence = true;
        } else if (key == "num_speculative_tokens") {
            c.num_speculative_tokens = static_cast<int>(read_int(key, value, 1, kMaxSpeculativeTokens));
            has_num_tokens = true;
        } else if (key == "prompt_lookup_min") {
            c.prompt_lookup_min = static_cast<int>(read_int(key, value, 1, kMaxPromptLookup));
            has_min = true;
        } else if (key == "prompt_lookup_max") {
            c.prompt_lookup_max = static_cast<int>(read_int(key, value, 1, kMaxPromptLookup));
            has_max = true;
        } else if (key == "suffix_decoding_max_tree_depth") {
            c.suffix_decoding_max_tree_depth = static_cast<int>(read_int(key, value, 1, kMaxTreeDepth));
        } else if (key == "suffix_decoding_max_cached_requests") {
            c.suffix_decoding_max_cached_requests = static_cast<int>(read_int(key, value, 0, 1000000));
        } else if (key == "suffix_decoding_max_spec_factor") {
            c.suffix_decoding_max_spec_factor = read_number(key, value, 0.0, 1e6);
        } else if (key == "suffix_decoding_min_token_prob") {
            c.suffix_decoding_min_token_prob = read_number(key, value, 0.0, 1.0);
        } else if (key == "disable_by_batch_size") {
            c.disable_by_batch_size = static_cast<int>(read_int(key, value, 0, 1 << 20));
        } else if (key == "rejection_sample_method") {
            // vLLM's other methods (synthetic, block) change the output
            // distribution or the verification rule; only the exact one is here.
            if (read_string(key, value) != "standard")
                refuse(key, "'" + value.as_string() + "' is not supported (only 'standard')");
        } else {
            throw_invalid_argument("speculative_config: unknown or unsupported field '" + key + "' (supported: " +
                                   kKnownFields + ")");
        }
    }
    // vLLM infers the method from `model` when it is absent.
    if (method.empty()) {
        if (model == "ngram" || model == "[ngram]" || model == "suffix") method = model;
        else if (!model.empty()) method = "draft_model";
        else throw_invalid_argument("speculative_config: 'method' is required (ngram, suffix or draft_model)");
    }
    if (method == "ngram" || method == "[ngram]") {
        c.method = SpeculativeMethod::NGRAM;
        if (!has_num_tokens) refuse("num_speculative_tokens", "is required with method 'ngram'");
        // vLLM's defaults: both 5, or the one given for both.
        if (has_min && !has_max) c.prompt_lookup_max = c.prompt_lookup_min;
        if (has_max && !has_min) c.prompt_lookup_min = c.prompt_lookup_max;
        if (c.prompt_lookup_min > c.prompt_lookup_max)
            refuse("prompt_lookup_min", "(" + std::to_string(c.prompt_lookup_min) + ") must be <= prompt_lookup_max (" +
                                            std::to_string(c.prompt_lookup_max) + ")");
    } else if (method == "suffix") {
        c.method = SpeculativeMethod::SUFFIX;
        // vLLM: suffix decoding sizes its drafts itself, up to the tree depth.
        if (!has_num_tokens)
            c.num_speculative_tokens = std::min(c.suffix_decoding_max_tree_depth, kMaxSpeculativeTokens);
    } else if (method == "draft_model") {
        if (model.empty()) refuse("model", "is required with method 'draft_model' (a GGUF file or HF directory)");
        if (!path_exists(model)) refuse("model", "names a draft model that does not exist: '" + model + "'");
        c.method = SpeculativeMethod::DRAFT_MODEL;
        c.model = model;
        if (!has_num_tokens) refuse("num_speculative_tokens", "is required with method 'draft_model'");
    } else {
        refuse("method", "'" + method + "' is not supported (supported: ngram, suffix, draft_model)");
    }
    if (method != "suffix" && c.num_speculative_tokens <= 0) refuse("num_speculative_tokens", "is required");
    if (c.draft_vocab_size > 0 && c.method != SpeculativeMethod::DRAFT_MODEL)
        refuse("draft_vocab_size", "applies to method 'draft_model' only");
    if (has_confidence && c.method != SpeculativeMethod::DRAFT_MODEL)
        refuse("draft_confidence_threshold", "applies to method 'draft_model' only");
    return c;
}

}  // namespace vllm
