#include "tokenizer/hf_tokenizer_json.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "formats/mapped_file.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/metaspace_bpe_tokenizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/token_pieces.h"
#include "tokenizer/unigram_tokenizer.h"
#include "tokenizer/wordpiece_tokenizer.h"
#include "util/base64.h"
#include "util/error.h"
#include "util/json.h"
#include "util/recursion_budget.h"

namespace vllm {

namespace {

const char kMetaspace[] = "\xE2\x96\x81";  // U+2581

// The Split regexes of byte-level tokenizers whose splits a GGUF
// pre-tokenizer reproduces.
struct KnownSplit {
    const char* regex;
    PreTokenizerKind kind;
};
const KnownSplit kKnownSplits[] = {
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     PreTokenizerKind::LLAMA3},
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     PreTokenizerKind::QWEN2},
    {R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", PreTokenizerKind::GPT2},
    // Qwen 3.5/3.6
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     PreTokenizerKind::QWEN35},
    // o200k: gpt-oss, Phi-4-mini, GPT-4o
    {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
     R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
     R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     PreTokenizerKind::GPT4O},
};

// Sequences of Split regexes (each Isolated, in this order) that a GGUF
// pre-tokenizer's passes reproduce.
struct KnownSplitSequence {
    std::vector<std::string> regexes;
    PreTokenizerKind kind;
};
const KnownSplitSequence kKnownSplitSequences[] = {
    // DeepSeek-V3 (its regexes hold a literal CR and LF)
    {{R"(\p{N}{1,3})", "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|"
      "\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},
     PreTokenizerKind::DEEPSEEK3},
    // DeepSeek LLM and DeepSeek-V2 (the six Splits llama.cpp's deepseek-llm
    // pre-tokenizer reproduces; the first holds a literal CR and LF)
    {{
     "[\r\n]",
     "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
     "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
     "\\s+$",
     "[一-龥ࠀ-一가-퟿]+",
     "\\p{N}+"},
     PreTokenizerKind::DEEPSEEK_LLM},
};

// Whether `regex` is one of the Split regexes above, alone or in a sequence.
bool known_split_regex(const std::string& regex) {
    for (const KnownSplit& k : kKnownSplits) {
        if (regex == k.regex) return true;
    }
    for (const KnownSplitSequence& k : kKnownSplitSequences) {
        if (std::find(k.regexes.begin(), k.regexes.end(), regex) != k.regexes.end()) return true;
    }
    return false;
}

// The kind of a file's Split regexes, in order; false for a sequence none
// reproduces.
bool split_sequence_kind(const std::vector<std::string>& regexes, PreTokenizerKind& kind) {
    if (regexes.size() == 1) {
        for (const KnownSplit& k : kKnownSplits) {
            if (regexes[0] == k.regex) {
                kind = k.kind;
                return true;
            }
        }
    }
    for (const KnownSplitSequence& k : kKnownSplitSequences) {
        if (regexes == k.regexes) {
            kind = k.kind;
            return true;
        }
    }
    return false;
}

// Reads one tokenizer.json; every refusal names the file and the component.
class Loader {
public:
    Loader(std::string path, const HfTokenizerOptions& options) : path_(std::move(path)), options_(options) {}

    std::unique_ptr<Tokenizer> load();

private:
    [[noreturn]] void refuse(const std::string& what) const { throw_model_load("'" + path_ + "': " + what); }

    const json::Value& member(const json::Value& object, const char* key, const std::string& where) const;
    std::string type_of(const json::Value& component, const std::string& where) const;
    bool flag(const json::Value& object, const char* key, bool fallback) const;
    // The components of a Sequence (or the component itself).
    std::vector<const json::Value*> flatten(const json::Value& component, const char* list_key,
                                            const std::string& where) const;

    void read_vocab(const json::Value& model);
    void read_merges(const json::Value& model);
    void read_added_tokens(const json::Value& root);
    void read_normalizer(const json::Value& root);
    void read_pre_tokenizer(const json::Value& root);
    void read_decoder(const json::Value& root);
    void read_post_processor(const json::Value& root);
    void apply_options();
    // Encoders' models (encoder_tokenizers.h).
    void read_bert_normalizer(const json::Value& normalizer);
    std::unique_ptr<Tokenizer> load_wordpiece(const json::Value& root, const json::Value& model);
    void read_precompiled(const json::Value& normalizer);
    void read_unigram_replace(const json::Value& normalizer);
    std::unique_ptr<Tokenizer> load_unigram(const json::Value& root, const json::Value& model);
    // Sizes the id table by the vocabulary (`vocab_size` entries) and the
    // added tokens.
    void bound_token_ids(const json::Value& root, size_t vocab_size);
    // The added tokens, the unknown token, the post-processor's and
    // tokenizer_config.json's special tokens.
    void read_specials(const json::Value& root, const json::Value& model);
    int32_t token_id(const std::string& text, const std::string& where) const;
    // The slot of token id `id` in data_.tokens, grown to hold it; refused
    // (naming `what`) unless it is an integer below max_token_id_.
    size_t token_slot(const json::Value& id, const std::string& what);

    std::string path_;
    HfTokenizerOptions options_;
    mutable int flatten_depth_ = 0;  // Sequences open in flatten()
    // Ids may leave gaps (unused tokens), but the table they index is sized
    // by the largest: bounded by the tokens the file names plus kIdGapSlack,
    // so a file cannot make the loader allocate more than it describes.
    static constexpr size_t kIdGapSlack = 65536;
    size_t max_token_id_ = 0;
    TokenizerData data_;
    std::vector<MergePair> merges_;
    std::vector<AddedToken> added_tokens_;
    HfNormalizer normalizer_;
    bool byte_level_ = false;       // ByteLevel pre-tokenizer
    bool replaces_spaces_ = false;  // normalizer Replace " " -> "▁" or Metaspace
    bool bert_words_ = false;       // BertPreTokenizer
    bool wordpiece_ = false;        // model WordPiece
    bool unigram_ = false;          // model Unigram
    bool whitespace_split_ = false; // WhitespaceSplit (Unigram)
    PreTokenizerSpec spec_;
    MetaspaceOptions metaspace_;
};

const json::Value& Loader::member(const json::Value& object, const char* key, const std::string& where) const {
    const json::Value* v = object.is_object() ? object.find(key) : nullptr;
    if (v == nullptr) refuse(where + " has no '" + key + "'");
    return *v;
}

std::string Loader::type_of(const json::Value& component, const std::string& where) const {
    const json::Value& type = member(component, "type", where);
    if (!type.is_string()) refuse(where + "'s type is not a string");
    return type.as_string();
}

bool Loader::flag(const json::Value& object, const char* key, bool fallback) const {
    const json::Value* v = object.find(key);
    if (v == nullptr || v->is_null()) return fallback;
    if (!v->is_bool()) refuse(std::string("'") + key + "' is not a boolean");
    return v->as_bool();
}

std::vector<const json::Value*> Loader::flatten(const json::Value& component, const char* list_key,
                                                const std::string& where) const {
    // Sequences nest as deep as the file's JSON (json::kMaxDepth, or what the stack allows).
    static constexpr RecursionLimit kNesting{"a Sequence", json::kMaxDepth};
    const RecursionGuard guard(kNesting, flatten_depth_, [this](const std::string& why) { refuse(why); });
    if (component.is_null()) return {};
    if (type_of(component, where) != "Sequence") return {&component};
    const json::Value& list = member(component, list_key, where);
    if (!list.is_array()) refuse(where + " Sequence's '" + list_key + "' is not an array");
    std::vector<const json::Value*> out;
    for (const json::Value& item : list.items()) {
        for (const json::Value* c : flatten(item, list_key, where)) out.push_back(c);
    }
    return out;
}

void Loader::read_vocab(const json::Value& model) {
    const json::Value& vocab = member(model, "vocab", "the model");
    if (!vocab.is_object()) refuse("the model's vocab is not an object");
    for (const auto& [text, id] : vocab.members()) data_.tokens[token_slot(id, "vocab entry '" + text + "'")] = text;
}

size_t Loader::token_slot(const json::Value& id, const std::string& what) {
    if (!id.is_int() || id.as_int() < 0 || id.as_int() >= (int64_t(1) << 31)) refuse(what + " has no valid id");
    const size_t i = static_cast<size_t>(id.as_int());
    if (i >= max_token_id_) {
        refuse(what + " has id " + std::to_string(i) + ", past the " + std::to_string(max_token_id_) +
               " ids a file naming this many tokens may use (their count plus " + std::to_string(kIdGapSlack) + ")");
    }
    if (i >= data_.tokens.size()) data_.tokens.resize(i + 1);
    return i;
}

void Loader::read_merges(const json::Value& model) {
    const json::Value* merges = model.find("merges");
    if (merges == nullptr || !merges->is_array()) refuse("the BPE model has no merges array");
    merges_.reserve(merges->size());
    for (const json::Value& m : merges->items()) {
        if (m.is_string()) {
            // "left right": exactly one space, as tokenizers requires.
            const std::string& s = m.as_string();
            const size_t space = s.find(' ');
            if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
                refuse("merge '" + s + "' is not two tokens separated by a space");
            }
            merges_.emplace_back(s.substr(0, space), s.substr(space + 1));
        } else if (m.is_array() && m.size() == 2 && m.items()[0].is_string() && m.items()[1].is_string()) {
            merges_.emplace_back(m.items()[0].as_string(), m.items()[1].as_string());
        } else {
            refuse("a merge is neither \"a b\" nor [a, b]");
        }
    }
}

void Loader::read_added_tokens(const json::Value& root) {
    const json::Value* added = root.find("added_tokens");
    if (added == nullptr || added->is_null()) return;
    if (!added->is_array()) refuse("added_tokens is not an array");
    for (const json::Value& t : added->items()) {
        const json::Value& id = member(t, "id", "an added token");
        const json::Value& content = member(t, "content", "an added token");
        if (!content.is_string()) refuse("an added token has no valid content");
        const std::string& text = content.as_string();
        const bool special = flag(t, "special", false);
        const size_t i = token_slot(id, "added token '" + text + "'");
        data_.tokens[i] = text;
        if (data_.token_types.size() < data_.tokens.size()) {
            data_.token_types.resize(data_.tokens.size(), static_cast<int32_t>(TokenType::NORMAL));
        }
        data_.token_types[i] = static_cast<int32_t>(special ? TokenType::CONTROL : TokenType::USER_DEFINED);
        added_tokens_.push_back({static_cast<int32_t>(i), text, special, flag(t, "single_word", false),
                                 flag(t, "lstrip", false), flag(t, "rstrip", false), flag(t, "normalized", true)});
    }
}

void Loader::read_normalizer(const json::Value& root) {
    const json::Value* normalizer = root.find("normalizer");
    if (normalizer == nullptr) return;
    for (const json::Value* n : flatten(*normalizer, "normalizers", "the normalizer")) {
        const std::string type = type_of(*n, "the normalizer");
        if (type == "Replace" && unigram_) {
            read_unigram_replace(*n);
        } else if (type == "Replace") {
            const json::Value& pattern = member(*n, "pattern", "the Replace normalizer");
            const json::Value* literal = pattern.find("String");
            const json::Value& content = member(*n, "content", "the Replace normalizer");
            if (literal == nullptr || !literal->is_string() || literal->as_string() != " " || !content.is_string() ||
                content.as_string() != kMetaspace) {
                refuse("normalizer Replace other than \" \" -> \"\u2581\" is not supported");
            }
            replaces_spaces_ = true;
            normalizer_.add(HfNormalizer::Step::REPLACE_SPACES);
        } else if (type == "Prepend") {
            const json::Value& prepend = member(*n, "prepend", "the Prepend normalizer");
            if (!prepend.is_string() || prepend.as_string() != kMetaspace) {
                refuse("normalizer Prepend other than \"\u2581\" is not supported");
            }
            normalizer_.add(HfNormalizer::Step::PREPEND_METASPACE);
        } else if (type == "NFC") {
            normalizer_.add(HfNormalizer::Step::NFC);
        } else if (type == "BertNormalizer") {
            read_bert_normalizer(*n);
        } else if (type == "Precompiled" && unigram_) {
            read_precompiled(*n);
        } else {
            refuse("normalizer " + type + " is not supported");
        }
    }
}

void Loader::read_pre_tokenizer(const json::Value& root) {
    const json::Value* pre = root.find("pre_tokenizer");
    if (pre == nullptr) return;
    bool digits = false;
    std::vector<std::string> split_regexes;  // in order
    bool byte_level_regex = false;
    for (const json::Value* p : flatten(*pre, "pretokenizers", "the pre-tokenizer")) {
        const std::string type = type_of(*p, "the pre-tokenizer");
        if (type == "ByteLevel") {
            if (flag(*p, "add_prefix_space", false)) refuse("pre-tokenizer ByteLevel with add_prefix_space is not supported");
            byte_level_ = true;
            byte_level_regex = flag(*p, "use_regex", true);
        } else if (type == "Digits") {
            if (!flag(*p, "individual_digits", false)) refuse("pre-tokenizer Digits without individual_digits is not supported");
            digits = true;
        } else if (type == "Split") {
            const json::Value& pattern = member(*p, "pattern", "the Split pre-tokenizer");
            const json::Value* regex = pattern.find("Regex");
            const json::Value* literal = pattern.find("String");
            if (literal != nullptr && literal->is_string() && literal->as_string() == " " && replaces_spaces_) {
                continue;  // no spaces are left once the normalizer replaced them
            }
            if (regex == nullptr || !regex->is_string()) refuse("pre-tokenizer Split on a string is not supported");
            if (!known_split_regex(regex->as_string())) {
                refuse("pre-tokenizer Split regex '" + regex->as_string() + "' is not supported");
            }
            split_regexes.push_back(regex->as_string());
            const json::Value* behavior = p->find("behavior");
            if (behavior == nullptr || !behavior->is_string() || behavior->as_string() != "Isolated" ||
                flag(*p, "invert", false)) {
                refuse("pre-tokenizer Split other than Isolated is not supported");
            }
        } else if (type == "BertPreTokenizer") {
            bert_words_ = true;
        } else if (type == "WhitespaceSplit" && unigram_) {
            whitespace_split_ = true;
        } else if (type == "Metaspace") {
            const json::Value* replacement = p->find("replacement");
            if (replacement != nullptr && (!replacement->is_string() || replacement->as_string() != kMetaspace)) {
                refuse("pre-tokenizer Metaspace with a replacement other than \"\u2581\" is not supported");
            }
            replaces_spaces_ = true;
            metaspace_.split = flag(*p, "split", true);
            const json::Value* scheme = p->find("prepend_scheme");
            const std::string s = scheme != nullptr && scheme->is_string()
                                      ? scheme->as_string()
                                      : (flag(*p, "add_prefix_space", true) ? "always" : "never");
            if (s == "always") {
                metaspace_.prepend = MetaspaceOptions::Prepend::ALWAYS;
            } else if (s == "first") {
                metaspace_.prepend = MetaspaceOptions::Prepend::FIRST;
            } else if (s == "never") {
                metaspace_.prepend = MetaspaceOptions::Prepend::NEVER;
            } else {
                refuse("pre-tokenizer Metaspace prepend_scheme '" + s + "' is not supported");
            }
        } else {
            refuse("pre-tokenizer " + type + " is not supported");
        }
    }
    PreTokenizerKind split_kind = PreTokenizerKind::DEFAULT;
    const bool split = !split_regexes.empty();
    if (split && !split_sequence_kind(split_regexes, split_kind)) {
        refuse("this sequence of " + std::to_string(split_regexes.size()) + " Split regexes is not supported");
    }
    if (!byte_level_) {
        if (digits || split) refuse("a Digits or Split pre-tokenizer without ByteLevel is not supported");
        if (normalizer_.has(HfNormalizer::Step::NFC)) refuse("normalizer NFC is supported with ByteLevel pre-tokenization only");
        return;
    }
    if (replaces_spaces_) refuse("ByteLevel together with a space replacement is not supported");
    // ByteLevel's own regex is GPT-2's; with a Split before it, it has none.
    if (split && !byte_level_regex && !digits) {
        spec_.kind = split_kind;
    } else if (!split && byte_level_regex) {
        spec_.kind = digits ? PreTokenizerKind::GPT2_SINGLE_DIGITS : PreTokenizerKind::GPT2;
    } else {
        refuse("this combination of Split, Digits and ByteLevel pre-tokenizers is not supported");
    }
}

void Loader::read_decoder(const json::Value& root) {
    const json::Value* decoder = root.find("decoder");
    if (decoder == nullptr) return;
    for (const json::Value* d : flatten(*decoder, "decoders", "the decoder")) {
        const std::string type = type_of(*d, "the decoder");
        const bool fits = wordpiece_ ? type == "WordPiece"
                          : byte_level_ ? type == "ByteLevel"
                                        : type == "Replace" || type == "ByteFallback" || type == "Fuse" ||
                                              type == "Strip" || type == "Metaspace";
        // Token pieces are decoded by the pre-tokenization's inverse; Strip
        // (the leading space of a whole text) does not apply to generated
        // continuations.
        if (!fits) refuse("decoder " + type + " is not supported with this pre-tokenization");
    }
}

int32_t Loader::token_id(const std::string& text, const std::string& where) const {
    for (size_t id = 0; id < data_.tokens.size(); ++id) {
        if (data_.tokens[id] == text) return static_cast<int32_t>(id);
    }
    refuse(where + " '" + text + "' is not in the vocabulary");
}

void Loader::read_post_processor(const json::Value& root) {
    const json::Value* post = root.find("post_processor");
    if (post == nullptr) return;
    for (const json::Value* p : flatten(*post, "processors", "the post-processor")) {
        const std::string type = type_of(*p, "the post-processor");
        if (type == "ByteLevel") continue;  // offsets only
        if (type == "RobertaProcessing" || (type == "BertProcessing" && wordpiece_)) {
            for (const char* key : {"cls", "sep"}) {
                const json::Value& pair = member(*p, key, "the " + type + " post-processor");
                if (!pair.is_array() || pair.size() != 2 || !pair.items()[0].is_string()) {
                    refuse(type + "'s '" + key + "' is not [token, id]");
                }
                (key[0] == 'c' ? data_.bos_id : data_.eos_id) = token_id(pair.items()[0].as_string(), key);
            }
            data_.add_bos = data_.add_eos = true;
            continue;
        }
        if (type != "TemplateProcessing") refuse("post-processor " + type + " is not supported");
        // single: [SpecialToken BOS]? Sequence A [SpecialToken EOS]?
        const json::Value& single = member(*p, "single", "the TemplateProcessing post-processor");
        if (!single.is_array()) refuse("TemplateProcessing's 'single' is not an array");
        bool seen_sequence = false;
        for (const json::Value& piece : single.items()) {
            if (piece.find("Sequence") != nullptr) {
                seen_sequence = true;
                continue;
            }
            const json::Value* special = piece.find("SpecialToken");
            const json::Value* id = special != nullptr ? special->find("id") : nullptr;
            if (id == nullptr || !id->is_string()) refuse("a TemplateProcessing piece is neither Sequence nor SpecialToken");
            bool& add = seen_sequence ? data_.add_eos : data_.add_bos;
            if (add) refuse("TemplateProcessing with more than one special token on a side is not supported");
            add = true;
            (seen_sequence ? data_.eos_id : data_.bos_id) = token_id(id->as_string(), "TemplateProcessing token");
        }
    }
}

void Loader::apply_options() {
    if (!options_.bos_token.empty()) data_.bos_id = token_id(options_.bos_token, "bos_token");
    if (!options_.eos_token.empty()) data_.eos_id = token_id(options_.eos_token, "eos_token");
    if (options_.add_bos_token) data_.add_bos = *options_.add_bos_token;
    if (options_.add_eos_token) data_.add_eos = *options_.add_eos_token;
    if (data_.add_bos && data_.bos_id < 0) refuse("add_bos_token is true, but there is no bos_token");
    if (data_.add_eos && data_.eos_id < 0) refuse("add_eos_token is true, but there is no eos_token");
    for (int32_t id : options_.eos_token_ids) {
        if (id < 0 || static_cast<size_t>(id) >= data_.tokens.size())
            refuse("generation_config.json's eos_token_id " + std::to_string(id) + " is outside the vocabulary");
        data_.extra_eog_ids.push_back(id);
    }
}

std::unique_ptr<Tokenizer> Loader::load() {
    // Through MappedFile, so a FIFO or device in its place is refused
    // without blocking rather than read.
    const MappedFile file(
        path_, [&](const std::string& why) { throw_model_load("cannot read tokenizer file '" + path_ + "': " + why); });
    json::Value root;
    try {
        root = json::parse(std::string_view(reinterpret_cast<const char*>(file.data()), file.size()));
    } catch (const Error& e) {
        refuse(std::string("not a JSON tokenizer file: ") + e.what());
    }
    if (!root.is_object()) refuse("not a tokenizer.json: the top level is not an object");

    const json::Value& model = member(root, "model", "the tokenizer");
    const json::Value* type = model.find("type");
    const std::string model_type = type != nullptr && type->is_string() ? type->as_string() : "BPE";
    if (model_type == "WordPiece") return load_wordpiece(root, model);
    if (model_type == "Unigram") return load_unigram(root, model);
    if (model_type != "BPE") refuse("model " + model_type + " is not supported (BPE, WordPiece and Unigram only)");
    const json::Value* dropout = model.find("dropout");
    if (dropout != nullptr && !dropout->is_null()) refuse("BPE dropout is not supported");
    for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        const json::Value* v = model.find(affix);
        if (v != nullptr && v->is_string() && !v->as_string().empty()) {
            refuse(std::string("BPE ") + affix + " is not supported");
        }
    }

    read_normalizer(root);
    read_pre_tokenizer(root);
    read_decoder(root);
    if (!byte_level_ && !replaces_spaces_) refuse("neither a ByteLevel nor a Metaspace-style tokenizer");
    const json::Value& vocab = member(model, "vocab", "the model");
    bound_token_ids(root, vocab.is_object() ? vocab.size() : 0);
    read_vocab(model);
    read_merges(model);
    data_.token_types.resize(data_.tokens.size(), static_cast<int32_t>(TokenType::NORMAL));
    const bool byte_fallback = flag(model, "byte_fallback", false);
    for (size_t id = 0; id < data_.tokens.size(); ++id) {
        if (data_.tokens[id].empty()) {
            data_.token_types[id] = static_cast<int32_t>(TokenType::UNUSED);
        } else if (byte_fallback && byte_fallback_value(data_.tokens[id]) >= 0) {
            data_.token_types[id] = static_cast<int32_t>(TokenType::BYTE);
        }
    }
    read_specials(root, model);

    const bool ignore_merges = flag(model, "ignore_merges", false);
    data_.model = byte_level_ ? "gpt2" : "llama";
    if (byte_level_) {
        spec_.ignore_merges = ignore_merges;
        return std::make_unique<BpeTokenizer>(std::move(data_), spec_, merges_, AddedVocabulary(added_tokens_, normalizer_));
    }
    metaspace_.ignore_merges = ignore_merges;
    metaspace_.fallback = {byte_fallback, data_.unk_id, flag(model, "fuse_unk", false)};
    return std::make_unique<MetaspaceBpeTokenizer>(std::move(data_), merges_, AddedVocabulary(added_tokens_, normalizer_),
                                                   metaspace_);
}

void Loader::bound_token_ids(const json::Value& root, size_t vocab_size) {
    const json::Value* added = root.find("added_tokens");
    max_token_id_ = vocab_size + (added != nullptr && added->is_array() ? added->size() : 0) + kIdGapSlack;
}

void Loader::read_specials(const json::Value& root, const json::Value& model) {
    read_added_tokens(root);
    const json::Value* unk = model.find("unk_token");
    if (unk != nullptr && unk->is_string()) data_.unk_id = token_id(unk->as_string(), "unk_token");
    read_post_processor(root);
    apply_options();
}

void Loader::read_bert_normalizer(const json::Value& n) {
    BertNormalizerOptions options;
    options.clean_text = flag(n, "clean_text", true);
    options.handle_chinese_chars = flag(n, "handle_chinese_chars", true);
    options.lowercase = flag(n, "lowercase", true);
    options.strip_accents = flag(n, "strip_accents", options.lowercase);  // null: as lowercase
    normalizer_.add_bert(options);
}

std::unique_ptr<Tokenizer> Loader::load_wordpiece(const json::Value& root, const json::Value& model) {
    const json::Value* prefix = model.find("continuing_subword_prefix");
    if (prefix != nullptr && !prefix->is_null() && (!prefix->is_string() || prefix->as_string() != "##")) {
        refuse("WordPiece continuing_subword_prefix other than \"##\" is not supported");
    }
    const json::Value* max_chars = model.find("max_input_chars_per_word");
    if (max_chars != nullptr && !max_chars->is_null() && (!max_chars->is_int() || max_chars->as_int() < 0)) {
        refuse("WordPiece max_input_chars_per_word is not a count");
    }
    wordpiece_ = true;
    read_normalizer(root);
    read_pre_tokenizer(root);
    if (!bert_words_ || byte_level_ || replaces_spaces_) {
        refuse("model WordPiece is not supported with this pre-tokenizer (BertPreTokenizer only)");
    }
    read_decoder(root);
    const json::Value& vocab = member(model, "vocab", "the model");
    bound_token_ids(root, vocab.is_object() ? vocab.size() : 0);
    read_vocab(model);
    data_.token_types.resize(data_.tokens.size(), static_cast<int32_t>(TokenType::NORMAL));
    for (size_t id = 0; id < data_.tokens.size(); ++id) {
        if (data_.tokens[id].empty()) data_.token_types[id] = static_cast<int32_t>(TokenType::UNUSED);
    }
    read_specials(root, model);
    data_.model = "bert";
    const size_t max_word_chars = max_chars != nullptr && max_chars->is_int() ? max_chars->as_int() : 100;
    return std::make_unique<WordPieceTokenizer>(std::move(data_), AddedVocabulary(added_tokens_, normalizer_),
                                                max_word_chars);
}

void Loader::read_precompiled(const json::Value& n) {
    const json::Value& blob = member(n, "precompiled_charsmap", "the Precompiled normalizer");
    if (blob.is_null()) return;  // no rules
    const std::optional<std::string> bytes = blob.is_string() ? base64_decode(blob.as_string()) : std::nullopt;
    if (!bytes) refuse("the Precompiled normalizer's precompiled_charsmap is not base64");
    try {
        normalizer_.add_precompiled(std::make_shared<const PrecompiledCharsmap>(*bytes));
    } catch (const Error& e) {
        refuse(e.what());
    }
}

void Loader::read_unigram_replace(const json::Value& n) {
    const json::Value& pattern = member(n, "pattern", "the Replace normalizer");
    const json::Value& content = member(n, "content", "the Replace normalizer");
    const json::Value* literal = pattern.find("String");
    const json::Value* regex = pattern.find("Regex");
    if (!content.is_string()) refuse("the Replace normalizer's content is not a string");
    if (literal != nullptr && literal->is_string()) {
        normalizer_.add_replace(literal->as_string(), content.as_string());
    } else if (regex != nullptr && regex->is_string() && regex->as_string() == " {2,}") {
        normalizer_.add_collapse_spaces(content.as_string());
    } else {
        refuse("normalizer Replace with this pattern is not supported (a string, or the regex \" {2,}\")");
    }
}

std::unique_ptr<Tokenizer> Loader::load_unigram(const json::Value& root, const json::Value& model) {
    unigram_ = true;
    if (flag(model, "byte_fallback", false)) refuse("Unigram byte_fallback is not supported");
    const json::Value& vocab = member(model, "vocab", "the model");
    if (!vocab.is_array() || vocab.size() == 0) refuse("model Unigram is not supported with an empty or non-list vocab");
    read_normalizer(root);
    read_pre_tokenizer(root);
    if (byte_level_ || bert_words_) refuse("model Unigram is not supported with this pre-tokenizer (Metaspace only)");
    read_decoder(root);
    bound_token_ids(root, vocab.size());
    data_.tokens.resize(vocab.size());
    std::vector<double> scores(vocab.size(), 0.0);
    std::vector<bool> in_vocab(vocab.size(), true);
    for (size_t id = 0; id < vocab.size(); ++id) {
        const json::Value& entry = vocab.items()[id];
        if (!entry.is_array() || entry.size() != 2 || !entry.items()[0].is_string() ||
            !entry.items()[1].is_number()) {
            refuse("Unigram vocab entry " + std::to_string(id) + " is not [piece, score]");
        }
        data_.tokens[id] = entry.items()[0].as_string();
        scores[id] = tokenizers_json_score(entry.items()[1].as_double());
    }
    data_.token_types.assign(data_.tokens.size(), static_cast<int32_t>(TokenType::NORMAL));
    const json::Value* unk = model.find("unk_id");
    if (unk != nullptr && !unk->is_null()) {
        if (!unk->is_int() || unk->as_int() < 0 || static_cast<size_t>(unk->as_int()) >= vocab.size()) {
            refuse("Unigram unk_id is not an id of the vocab");
        }
        data_.unk_id = static_cast<int32_t>(unk->as_int());
    }
    read_specials(root, model);
    data_.model = "t5";
    UnigramWordOptions words;
    words.whitespace_split = whitespace_split_;
    words.metaspace = metaspace_;
    return std::make_unique<UnigramTokenizer>(std::move(data_), AddedVocabulary(added_tokens_, normalizer_), scores,
                                              in_vocab, words);
}

}  // namespace

std::unique_ptr<Tokenizer> load_hf_tokenizer_json(const std::string& path, const HfTokenizerOptions& options) {
    return Loader(path, options).load();
}

}  // namespace vllm
