// Tokenizer encode and decode of arbitrary bytes: the first byte picks a
// tokenizer (byte-level BPE under each GGUF pre-tokenizer, SentencePiece,
// Gemma 4's character BPE, and the committed tokenizer.json seeds) and the flags; the rest is
// encoded, and also read as token ids to decode.
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_common.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/token_pieces.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/utf8.h"

namespace {

const char* const kPreTokenizers[] = {
    "default", "gpt-2", "smollm", "llama3", "qwen2", "falcon", "deepseek-llm", "deepseek-coder", "deepseek-v3",
    "tekken", "command-r", "exaone", "qwen35", "glm4", "gpt-4o", "kimi-k2",
};

std::string symbols(const std::string& bytes) {
    std::string out;
    for (unsigned char b : bytes) vllm::utf8::append(out, vllm::byte_to_codepoint(b));
    return out;
}

void add_token(vllm::TokenizerData& data, const std::string& text, vllm::TokenType type, float score = 0.0f) {
    data.tokens.push_back(text);
    data.token_types.push_back(static_cast<int32_t>(type));
    data.scores.push_back(score);
}

std::unique_ptr<vllm::Tokenizer> byte_level(const char* pre) {
    vllm::TokenizerData data;
    data.model = "gpt2";
    data.pre = pre;
    for (int b = 0; b < 256; ++b) add_token(data, symbols(std::string(1, static_cast<char>(b))), vllm::TokenType::NORMAL);
    for (const char* pair : {"h e", "l l", "he ll", "hell o", "  t", "i n", "1 2"}) {
        std::string a = pair, b;
        const size_t space = a.find(' ', 1);
        b = a.substr(space + 1);
        a.resize(space);
        data.merges.push_back(symbols(a) + " " + symbols(b));
        add_token(data, symbols(a + b), vllm::TokenType::NORMAL);
    }
    add_token(data, "<|endoftext|>", vllm::TokenType::CONTROL);
    add_token(data, "<|im_start|>", vllm::TokenType::CONTROL);
    add_token(data, "<tool>", vllm::TokenType::USER_DEFINED);
    data.scores.clear();
    data.eos_id = static_cast<int32_t>(data.tokens.size()) - 3;
    data.bos_id = data.eos_id;
    data.add_bos = true;
    return vllm::Tokenizer::create(data);
}

std::unique_ptr<vllm::Tokenizer> sentencepiece() {
    vllm::TokenizerData data;
    data.model = "llama";
    add_token(data, "<unk>", vllm::TokenType::UNKNOWN);
    add_token(data, "<s>", vllm::TokenType::CONTROL);
    add_token(data, "</s>", vllm::TokenType::CONTROL);
    for (int b = 0; b < 256; ++b) add_token(data, vllm::byte_fallback_text(static_cast<uint8_t>(b)), vllm::TokenType::BYTE);
    float score = -1.0f;
    for (const char* piece : {"\xE2\x96\x81", "a", "b", "e", "h", "l", "o", "\xE2\x96\x81h", "he", "ll", "hello",
                              "\xE2\x96\x81hello", "\xC3\xA9"}) {
        add_token(data, piece, vllm::TokenType::NORMAL, score);
        score -= 1.0f;
    }
    data.unk_id = 0;
    data.bos_id = 1;
    data.eos_id = 2;
    data.add_bos = true;
    data.add_space_prefix = true;
    return vllm::Tokenizer::create(data);
}

// Gemma 4's BPE over characters: "▁" for spaces, newline runs apart.
std::unique_ptr<vllm::Tokenizer> gemma4() {
    vllm::TokenizerData data;
    data.model = "gemma4";
    add_token(data, "<bos>", vllm::TokenType::CONTROL);
    add_token(data, "<eos>", vllm::TokenType::CONTROL);
    for (int b = 0; b < 256; ++b) add_token(data, vllm::byte_fallback_text(static_cast<uint8_t>(b)), vllm::TokenType::BYTE);
    for (const char* piece : {"\xE2\x96\x81", "h", "e", "l", "o", "\n", "\n\n", "he", "ll", "hell", "\xE2\x96\x81h"}) {
        add_token(data, piece, vllm::TokenType::NORMAL);
    }
    data.merges = {"h e", "l l", "he ll", "\xE2\x96\x81 h", "\n \n"};
    data.bos_id = 0;
    data.eos_id = 1;
    data.add_bos = true;
    return vllm::Tokenizer::create(data);
}

std::vector<std::unique_ptr<vllm::Tokenizer>> make_tokenizers() {
    std::vector<std::unique_ptr<vllm::Tokenizer>> out;
    for (const char* pre : kPreTokenizers) out.push_back(byte_level(pre));
    out.push_back(sentencepiece());
    out.push_back(gemma4());
    for (const char* name : {"byte_level_nfc.json", "metaspace_normalizer.json"}) {
        out.push_back(vllm::load_hf_tokenizer_json(std::string(VLLM_FUZZ_DIR "/corpus/fuzz_tokenizer_json/") + name));
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::vector<std::unique_ptr<vllm::Tokenizer>> tokenizers = make_tokenizers();
    if (size < 1) return 0;
    const vllm::Tokenizer& tokenizer = *tokenizers[data[0] % tokenizers.size()];
    const bool add_special = data[0] & 0x40;
    const bool parse_special = data[0] & 0x80;
    const std::string text(fuzz::text(data + 1, size - 1));

    const std::vector<int32_t> ids = tokenizer.encode(text, add_special, parse_special);
    vllm::IncrementalDetokenizer detokenizer(tokenizer, !parse_special);
    for (int32_t id : ids) {
        if (id < 0 || id >= tokenizer.vocab_size()) {
            std::fprintf(stderr, "encode gave id %d outside the vocabulary\n", id);
            std::abort();
        }
        (void)detokenizer.push(id);
    }
    (void)detokenizer.flush();

    // The same bytes as ids: those outside the vocabulary are refused.
    vllm::IncrementalDetokenizer raw(tokenizer, false);
    for (size_t at = 1; at + 4 <= size; at += 4) {
        int32_t id;
        std::memcpy(&id, data + at, 4);
        fuzz::refusals_allowed([&] { (void)raw.push(id % (tokenizer.vocab_size() + 8)); });
    }
    (void)raw.flush();
    return 0;
}
