// Tokenizer::create and what every tokenizer shares: token types, the
// end-of-generation set, special tokens around the model's own encoding,
// and token pieces.
#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/encoder_tokenizers.h"
#include "tokenizer/metaspace_bpe_tokenizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/token_pieces.h"
#include "util/error.h"
#include "util/fault_injection.h"

namespace vllm {

namespace {

// Texts llama.cpp takes for end-of-turn markers whatever the metadata says
// (its special_eog_ids), so chat models stop at the end of their turn.
const char* const kEndOfTurnTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>",  "<end_of_turn>",   "<|endoftext|>",
    "<|eom_id|>", "<EOT>",      "_<EOT>",   "<|end_of_text|>", "<end_of_utterance>",
    // Gemma 4, Kimi-K2
    "<eos>", "<turn|>", "<|tool_response>", "[EOT]", "[EOS]",
};

bool is_end_of_turn_text(const std::string& text) {
    for (const char* t : kEndOfTurnTexts) {
        if (text == t) return true;
    }
    return false;
}

}  // namespace

Tokenizer::Tokenizer(TokenizerData data) : data_(std::move(data)) {
    find_end_of_generation();
    specials_ = SpecialTokenSplitter(data_.tokens, data_.token_types);
}

Tokenizer::Tokenizer(TokenizerData data, AddedVocabulary added) : data_(std::move(data)), added_(std::move(added)) {
    find_end_of_generation();
}

void Tokenizer::find_end_of_generation() {
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
    eog_ids_.insert(eog_ids_.end(), data_.extra_eog_ids.begin(), data_.extra_eog_ids.end());
    std::sort(eog_ids_.begin(), eog_ids_.end());
    eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
}

void Tokenizer::set_pieces(std::string (*normal)(const std::string& text)) {
    const size_t n = data_.tokens.size();
    size_t text_bytes = 0;
    for (const std::string& text : data_.tokens) text_bytes += text.size();
    pieces_.reserve(n, text_bytes);  // pieces are no longer than their texts
    skippable_.resize(n);
    for (size_t id = 0; id < n; ++id) {
        const std::string& text = data_.tokens[id];
        const auto type = static_cast<TokenType>(data_.token_types[id]);
        switch (type) {
            case TokenType::NORMAL:
                pieces_.push_back(normal(text));
                break;
            case TokenType::CONTROL:
            case TokenType::UNKNOWN:
            case TokenType::USER_DEFINED:
                pieces_.push_back(text);
                break;
            case TokenType::BYTE: {
                const int b = byte_fallback_value(text);
                const char byte = static_cast<char>(b);
                pieces_.push_back(b >= 0 ? std::string_view(&byte, 1) : std::string_view());
                break;
            }
            default:
                // Unused and undefined tokens render as nothing.
                pieces_.push_back({});
                break;
        }
        skippable_[id] = type == TokenType::CONTROL || type == TokenType::UNKNOWN;
    }
}

std::vector<int32_t> Tokenizer::encode(const std::string& text, bool add_special, bool parse_special) const {
    fault::maybe_fail(fault::Point::Tokenize);
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 2);
    if (add_special && data_.add_bos) out.push_back(data_.bos_id);
    if (added_) {
        std::vector<AddedTokenPiece> pieces;
        added_->split(text, parse_special, pieces);
        for (const AddedTokenPiece& p : pieces) {
            if (p.token >= 0) {
                out.push_back(p.token);
            } else {
                encode_text(p.text, p.at_start, out);
            }
        }
    } else {
        std::vector<Fragment> fragments;
        specials_.split(text, parse_special, fragments);
        for (const Fragment& f : fragments) {
            if (f.token >= 0) {
                out.push_back(f.token);
            } else {
                encode_text(text.substr(f.begin, f.end - f.begin), f.begin == 0, out);
            }
        }
    }
    if (add_special && data_.add_eos) out.push_back(data_.eos_id);
    if (add_special && data_.add_sep) out.push_back(data_.sep_id);
    return out;
}

std::string_view Tokenizer::token_view(int32_t id, bool skip_special) const {
    if (id < 0 || id >= vocab_size()) {
        throw_invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary (size " +
                               std::to_string(vocab_size()) + ")");
    }
    if (skip_special && skippable_[id]) return {};
    return pieces_[id];
}

bool Tokenizer::is_eog(int32_t id) const { return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id); }

std::unique_ptr<Tokenizer> Tokenizer::create(TokenizerData data) {
    const bool spm = data.model == "llama";
    const bool gemma4 = data.model == "gemma4";
    const bool encoder = is_encoder_tokenizer_model(data.model);  // no merges, no pre-tokenizer key
    if (data.model != "gpt2" && !spm && !gemma4 && !encoder) {
        throw_model_load("unsupported tokenizer model '" + data.model +
                         "' (tokenizer.ggml.model): this engine has byte-level BPE ('gpt2'), SentencePiece "
                         "('llama'), Gemma 4's BPE ('gemma4'), BERT's WordPiece ('bert') and Unigram ('t5') only");
    }
    PreTokenizerSpec spec;
    // SentencePiece has no pre-tokenizer and Gemma 4 one of its own:
    // llama.cpp ignores the key there.
    if (!spm && !gemma4 && !encoder && !find_pretokenizer(data.pre, spec)) {
        throw_model_load("unknown pre-tokenizer '" + data.pre + "' (tokenizer.ggml.pre)");
    }
    const size_t n = data.tokens.size();
    if (n == 0) throw_model_load("the tokenizer has no tokens");
    if (!spm && !encoder && data.merges.empty()) throw_model_load("the BPE tokenizer has no merges (tokenizer.ggml.merges)");
    if (!data.scores.empty() && data.scores.size() != n) {
        throw_model_load("the tokenizer has " + std::to_string(data.scores.size()) + " scores for " +
                         std::to_string(n) + " tokens");
    }
    if (!data.token_types.empty() && data.token_types.size() != n) {
        throw_model_load("the tokenizer has " + std::to_string(data.token_types.size()) + " token types for " +
                         std::to_string(n) + " tokens");
    }
    for (int32_t id : {data.bos_id, data.eos_id, data.eot_id, data.eom_id, data.unk_id, data.pad_id, data.sep_id}) {
        if (id >= static_cast<int64_t>(n)) {
            throw_model_load("special token id " + std::to_string(id) + " is outside the vocabulary");
        }
    }
    if (data.add_bos && data.bos_id < 0) throw_model_load("add_bos_token is true, but there is no bos_token_id");
    if (data.add_eos && data.eos_id < 0) throw_model_load("add_eos_token is true, but there is no eos_token_id");
    if (data.add_sep && data.sep_id < 0) throw_model_load("add_sep_token is true, but there is no seperator_token_id");
    if (spm) return std::make_unique<SpmTokenizer>(std::move(data));
    if (encoder) return create_encoder_tokenizer(std::move(data));
    if (gemma4) {
        MetaspaceOptions options;
        options.newline_runs = true;
        options.fallback.byte_fallback = true;  // a character outside the vocabulary: its <0xNN> tokens
        return std::make_unique<MetaspaceBpeTokenizer>(std::move(data), options);
    }
    return std::make_unique<BpeTokenizer>(std::move(data), spec);
}

}  // namespace vllm
