// Tokenizer::create and what every tokenizer shares: token types and the
// end-of-generation set.
#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/pretokenizer.h"
#include "util/error.h"

namespace vllm {

namespace {

// Texts llama.cpp takes for end-of-turn markers whatever the metadata says
// (its special_eog_ids), so chat models stop at the end of their turn.
const char* const kEndOfTurnTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>",  "<end_of_turn>",   "<|endoftext|>",
    "<|eom_id|>", "<EOT>",      "_<EOT>",   "<|end_of_text|>", "<end_of_utterance>",
};

bool is_end_of_turn_text(const std::string& text) {
    for (const char* t : kEndOfTurnTexts) {
        if (text == t) return true;
    }
    return false;
}

}  // namespace

Tokenizer::Tokenizer(TokenizerData data) : data_(std::move(data)) {
    const size_t n = data_.tokens.size();
    if (data_.token_types.empty()) data_.token_types.assign(n, static_cast<int32_t>(TokenType::NORMAL));
    for (size_t id = 0; id < n; ++id) {
        if (is_end_of_turn_text(data_.tokens[id])) {
            data_.token_types[id] = static_cast<int32_t>(TokenType::CONTROL);
            eog_ids_.push_back(static_cast<int32_t>(id));
        }
    }
    for (int32_t id : {data_.eos_id, data_.eot_id, data_.eom_id}) {
        if (id >= 0) eog_ids_.push_back(id);
    }
    std::sort(eog_ids_.begin(), eog_ids_.end());
    eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
}

bool Tokenizer::is_eog(int32_t id) const { return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id); }

std::unique_ptr<Tokenizer> Tokenizer::create(const TokenizerData& data) {
    if (data.model != "gpt2") {
        throw_model_load("unsupported tokenizer model '" + data.model +
                         "' (tokenizer.ggml.model): this engine has byte-level BPE ('gpt2') only");
    }
    PreTokenizerSpec spec;
    if (!find_pretokenizer(data.pre, spec)) {
        throw_model_load("unknown pre-tokenizer '" + data.pre + "' (tokenizer.ggml.pre)");
    }
    const size_t n = data.tokens.size();
    if (n == 0) throw_model_load("the tokenizer has no tokens");
    if (data.merges.empty()) throw_model_load("the BPE tokenizer has no merges (tokenizer.ggml.merges)");
    if (!data.token_types.empty() && data.token_types.size() != n) {
        throw_model_load("the tokenizer has " + std::to_string(data.token_types.size()) + " token types for " +
                         std::to_string(n) + " tokens");
    }
    for (int32_t id : {data.bos_id, data.eos_id, data.eot_id, data.eom_id, data.unk_id, data.pad_id}) {
        if (id >= static_cast<int64_t>(n)) {
            throw_model_load("special token id " + std::to_string(id) + " is outside the vocabulary");
        }
    }
    if (data.add_bos && data.bos_id < 0) throw_model_load("add_bos_token is true, but there is no bos_token_id");
    if (data.add_eos && data.eos_id < 0) throw_model_load("add_eos_token is true, but there is no eos_token_id");
    return std::make_unique<BpeTokenizer>(data, spec);
}

}  // namespace vllm
