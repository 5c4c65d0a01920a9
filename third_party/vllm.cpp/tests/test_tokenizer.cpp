// Tokenizer tests against llama.cpp's own tokenization.
//
//   test_tokenizer MODEL.gguf GOLDEN.txt
//
// MODEL.gguf: SmolLM2-135M-Instruct (byte-level BPE). GOLDEN.txt:
// tests/golden/tokenizer_smollm2.txt (a .json path is taken to mean the
// .txt beside it), made by tests/golden/make_tokenizer_golden.py: sections
// started by "pre TAB name", then one case a line, hex(text) TAB ids TAB
// hex(llama.cpp's detokenization). Each section is run with that
// pre-tokenizer on the model's vocabulary.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "formats/gguf_reader.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/error.h"
#include "util/utf8.h"
#include "check.h"

using namespace vllm;

namespace {

// Printable form of a test string for failure messages.
std::string escape(const std::string& s, size_t max_len = 60) {
    std::string out;
    for (unsigned char c : s.substr(0, max_len)) {
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else {
            out += static_cast<char>(c);
        }
    }
    return s.size() > max_len ? out + "..." : out;
}

std::string join(const std::vector<int32_t>& ids) {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
    return out;
}


// Runs fn and checks that it throws an Error of `status` whose message
// contains `needle`.
void check_throws(const std::function<void()>& fn, vllm_status status, const std::string& needle,
                  const std::string& what) {
    try {
        fn();
        check(false, what + ": no error");
    } catch (const Error& e) {
        const std::string msg = e.what();
        check(e.status() == status && msg.find(needle) != std::string::npos,
              what + ": got status " + std::to_string(e.status()) + " '" + msg + "'");
    }
}

struct GoldenCase {
    std::string text;
    std::vector<int32_t> ids;
    std::string detokenized;
};

struct GoldenSection {
    std::string pre;
    std::vector<GoldenCase> cases;
};

std::string from_hex(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> fields;
    std::string field;
    std::istringstream in(line);
    while (std::getline(in, field, '\t')) fields.push_back(field);
    if (!line.empty() && line.back() == '\t') fields.push_back("");
    return fields;
}

std::vector<GoldenSection> read_golden(std::string path) {
    const std::string json = ".json";
    if (path.size() > json.size() && path.compare(path.size() - json.size(), json.size(), json) == 0) {
        path = path.substr(0, path.size() - json.size()) + ".txt";
    }
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read golden file " + path);
    std::vector<GoldenSection> sections;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        const std::vector<std::string> f = split_tabs(line);
        if (f.size() == 2 && f[0] == "pre") {
            sections.push_back({f[1], {}});
            continue;
        }
        if (f.size() != 3 || sections.empty()) throw std::runtime_error("bad golden line: " + line);
        GoldenCase c;
        c.text = from_hex(f[0]);
        std::istringstream ids(f[1]);
        for (int32_t id; ids >> id;) c.ids.push_back(id);
        c.detokenized = from_hex(f[2]);
        sections.back().cases.push_back(std::move(c));
    }
    return sections;
}

std::string decode(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
    std::string out;
    for (int32_t id : ids) out += tok.token_bytes(id, skip_special);
    return out;
}

void test_metadata(const TokenizerData& d) {
    check(d.model == "gpt2" && d.pre == "smollm", "model/pre read from GGUF");
    check(d.tokens.size() == 49152 && d.merges.size() == 48900, "token and merge counts");
    check(d.token_types.size() == d.tokens.size(), "token types read");
    check(d.bos_id == 1 && d.eos_id == 2 && d.unk_id == 0 && d.pad_id == 2, "special ids read");
    check(!d.add_bos && !d.add_eos, "add_bos/add_eos read");
}

void test_golden(const TokenizerData& base, const std::vector<GoldenSection>& sections) {
    for (const GoldenSection& section : sections) {
        TokenizerData data = base;
        data.pre = section.pre;
        const auto tok = Tokenizer::create(data);
        int mismatches = 0;
        for (const GoldenCase& c : section.cases) {
            const std::vector<int32_t> ids = tok->encode(c.text, false, true);
            const bool same = ids == c.ids;
            mismatches += same ? 0 : 1;
            check(same, "[" + section.pre + "] encode '" + escape(c.text) + "'\n  want " + join(c.ids) +
                            "\n  got  " + join(ids));
            if (section.pre == "smollm") {
                check(decode(*tok, c.ids, false) == c.detokenized,
                      "[smollm] decode of '" + escape(c.text) + "' differs from llama.cpp's");
            }
        }
        std::printf("golden [%s]: %zu cases, %d mismatches\n", section.pre.c_str(), section.cases.size(), mismatches);
    }
}

// Byte-level token of each byte: the tokens whose bytes are that one byte.
std::vector<int32_t> byte_tokens(const Tokenizer& tok) {
    std::vector<int32_t> ids(256, -1);
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
        const std::string b = tok.token_bytes(id, false);
        if (b.size() == 1 && ids[static_cast<uint8_t>(b[0])] < 0) ids[static_cast<uint8_t>(b[0])] = id;
    }
    return ids;
}

void test_incremental(const Tokenizer& tok) {
    const char* texts[] = {
        "emoji 😀 🎉 👍🏽 👨‍👩‍👧 🇫🇷 done",
        "日本語のテキストです。中文文本，한국어 텍스트",
        "مرحبا بالعالم ∑ ∫ √ ∞ and e\xcc\x81 combining",
    };
    for (const char* text : texts) {
        const std::vector<int32_t> ids = tok.encode(text, false, true);
        IncrementalDetokenizer detok(tok);
        std::string out;
        bool all_valid = true;
        int partial_tokens = 0;
        for (int32_t id : ids) {
            if (!utf8::is_valid(tok.token_bytes(id, false))) ++partial_tokens;
            const std::string delta = detok.push(id);
            all_valid = all_valid && utf8::is_valid(delta);
            out += delta;
        }
        out += detok.flush();
        check(partial_tokens > 0, std::string("tokens of '") + text + "' split a code point (test is meaningful)");
        check(all_valid, std::string("incremental deltas of '") + text + "' are valid UTF-8");
        check(out == text, std::string("incremental detokenization of '") + text + "' gives it back");
    }

    // SmolLM2 lacks a few byte tokens (0xC0, 0xC1, 0xF5.. among them), so
    // an impossible byte is fed as a stray continuation byte.
    const std::vector<int32_t> byte = byte_tokens(tok);
    bool have_all = true;
    for (int b : {0xE4, 0xB8, 0xAD, 0xF0, 0x9F, 0x98, 0x80, 0xED, 0xA0, int('a')}) have_all = have_all && byte[b] >= 0;
    check(have_all, "the byte tokens the checks below feed exist");
    if (!have_all) return;
    const std::string fffd = "\xEF\xBF\xBD";
    auto feed = [&](std::initializer_list<int> bytes, bool flush) {
        IncrementalDetokenizer d(tok);
        std::string out;
        for (int b : bytes) out += d.push(byte[b]) + "|";
        if (flush) out += d.flush();
        return out;
    };
    check(feed({0xE4, 0xB8, 0xAD}, false) == "||中|", "a CJK character arrives once complete");
    check(feed({0xF0, 0x9F, 0x98, 0x80}, false) == "|||😀|", "an emoji arrives once complete");
    check(feed({0x80}, false) == fffd + "|", "a stray continuation byte is replaced at once");
    check(feed({0xE4, 'a'}, false) == "|" + fffd + "a|", "a broken sequence is replaced when certainly invalid");
    check(feed({0xED, 0xA0}, false) == "|" + fffd + fffd + "|", "a surrogate encoding is invalid");
    check(feed({0xE4, 0xB8}, true) == "||" + fffd, "flush replaces an incomplete tail");

    IncrementalDetokenizer skip(tok);
    check(skip.push(2).empty(), "control tokens are skipped by default");
    IncrementalDetokenizer keep(tok, false);
    check(keep.push(2) == "<|im_end|>", "control tokens render without skip_special");
}

void test_special(const TokenizerData& base) {
    const auto tok = Tokenizer::create(base);
    const std::vector<int32_t> plain = tok->encode("<|im_start|>", false, false);
    bool has_special = false;
    for (int32_t id : plain) has_special = has_special || id == 1;
    check(!has_special && decode(*tok, plain, false) == "<|im_start|>", "control text stays text without parse_special");
    check(tok->encode("<|im_start|>", false, true) == std::vector<int32_t>{1}, "control text is one token with parse_special");
    check(tok->encode("hi", true, true) == tok->encode("hi", false, true), "no BOS for a model that adds none");

    TokenizerData adds = base;
    adds.add_bos = true;
    adds.add_eos = true;
    const auto tok2 = Tokenizer::create(adds);
    const std::vector<int32_t> ids = tok2->encode("hi", true, true);
    check(ids.size() >= 3 && ids.front() == 1 && ids.back() == 2, "add_special adds BOS and EOS");
    check(tok2->encode("", true, true) == (std::vector<int32_t>{1, 2}), "add_special on empty text");
    check(tok->encode("", false, true).empty(), "empty text gives no tokens");

    check(tok->is_eog(2) && tok->is_eog(0) && !tok->is_eog(1) && !tok->is_eog(100), "is_eog: <|im_end|>, <|endoftext|>");
    TokenizerData turns = base;
    turns.tokens[100] = "<turn|>";  // Gemma 4
    turns.tokens[101] = "[EOT]";    // Kimi-K2
    const auto tok_turns = Tokenizer::create(turns);
    check(tok_turns->is_eog(100) && tok_turns->is_eog(101) && tok_turns->token_bytes(100, true).empty(),
          "is_eog: Gemma 4's and Kimi-K2's end-of-turn texts, made control tokens");
    check(tok->token_bytes(1, true).empty() && tok->token_bytes(1, false) == "<|im_start|>", "token_bytes of control");
    check(tok->token_bytes(198, true) == "\n", "token_bytes maps byte-level symbols back");

    TokenizerData user = base;
    user.token_types[6] = static_cast<int32_t>(TokenType::USER_DEFINED);  // <filename>
    const auto tok3 = Tokenizer::create(user);
    const std::vector<int32_t> u = tok3->encode("a<filename>b", false, false);
    check(u.size() == 3 && u[1] == 6, "user-defined text is one token even without parse_special");
    check(tok3->token_bytes(6, true) == "<filename>", "user-defined tokens render even with skip_special");
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A GGUF with only general.architecture: no tokenizer.
std::string gguf_without_tokenizer() {
    std::string b;
    auto u32 = [&](uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
    auto u64 = [&](uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); };
    auto str = [&](const std::string& s) {
        u64(s.size());
        b += s;
    };
    b += "GGUF";
    u32(3);  // version
    u64(0);  // tensors
    u64(1);  // metadata
    str("general.architecture");
    u32(8);  // STRING
    str("llama");
    return b;
}

void test_errors(const TokenizerData& base) {
    // ("bert", refused here before, is WordPiece now: test_tokenizer_encoders.py.)
    TokenizerData rwkv = base;
    rwkv.model = "rwkv";
    check_throws([&] { Tokenizer::create(rwkv); }, VLLM_ERR_MODEL_LOAD, "'rwkv'", "RWKV tokenizer model refused");
    TokenizerData pre = base;
    pre.pre = "no-such-pre";
    check_throws([&] { Tokenizer::create(pre); }, VLLM_ERR_MODEL_LOAD, "'no-such-pre'", "unknown pre-tokenizer refused");
    TokenizerData no_merges = base;
    no_merges.merges.clear();
    check_throws([&] { Tokenizer::create(no_merges); }, VLLM_ERR_MODEL_LOAD, "merges", "BPE without merges refused");
    TokenizerData no_bos = base;
    no_bos.add_bos = true;
    no_bos.bos_id = -1;
    check_throws([&] { Tokenizer::create(no_bos); }, VLLM_ERR_MODEL_LOAD, "bos", "add_bos without a BOS refused");
    TokenizerData dup = base;
    dup.tokens[5] = dup.tokens[4];
    check_throws([&] { Tokenizer::create(dup); }, VLLM_ERR_MODEL_LOAD, "duplicate", "duplicate tokens refused");

    const auto tok = Tokenizer::create(base);
    check_throws([&] { tok->token_bytes(-1, false); }, VLLM_ERR_INVALID_ARGUMENT, "-1", "token_bytes(-1)");
    check_throws([&] { tok->token_bytes(tok->vocab_size(), false); }, VLLM_ERR_INVALID_ARGUMENT, "49152",
                 "token_bytes(vocab_size)");
    IncrementalDetokenizer detok(*tok);
    check_throws([&] { detok.push(1 << 30); }, VLLM_ERR_INVALID_ARGUMENT, "outside", "detokenizer rejects bad ids");

    const std::string path = "/tmp/vllm_test_tokenizer_no_vocab_" + std::to_string(getpid()) + ".gguf";
    write_file(path, gguf_without_tokenizer());
    check_throws([&] { TokenizerData::from_gguf(GgufFile(path)); }, VLLM_ERR_MODEL_LOAD, "tokenizer.ggml.model",
                 "GGUF without a tokenizer");
    std::remove(path.c_str());
}

// Appends GGUF metadata values (little-endian, as the format stores them).
struct GgufBytes {
    std::string b;
    void u32(uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); }
    void u64(uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); }
    void f32(float v) { b.append(reinterpret_cast<const char*>(&v), 4); }
    void str(const std::string& s) {
        u64(s.size());
        b += s;
    }
    void header(uint64_t n_kv) {
        b += "GGUF";
        u32(3);  // version
        u64(0);  // tensors
        u64(n_kv);
    }
};

// A SentencePiece vocabulary's arrays as GGUF stores them (tokens, types,
// scores): the reader packs them, and the tokenizer data reads them back
// element by element; a wrongly typed or cut array is refused by name.
void test_packed_metadata_arrays() {
    const std::vector<std::string> texts = {"<unk>", "a", std::string(40, 'x'), "", "\xE2\x96\x81" "b"};
    const std::vector<int32_t> types = {2, 1, 1, 5, 1};
    const std::vector<float> scores = {0.0f, -1.5f, -2.25f, 0.0f, 3.0f};
    const auto write = [&](bool types_as_strings, size_t cut) {
        GgufBytes g;
        g.header(4);
        g.str("tokenizer.ggml.model");
        g.u32(8);  // STRING
        g.str("llama");
        g.str("tokenizer.ggml.tokens");
        g.u32(9);  // ARRAY
        g.u32(8);  // of STRING
        g.u64(texts.size());
        for (const std::string& t : texts) g.str(t);
        g.str("tokenizer.ggml.token_type");
        g.u32(9);
        g.u32(types_as_strings ? 8 : 5);  // of STRING or INT32
        g.u64(types.size());
        for (int32_t t : types) types_as_strings ? g.str(std::to_string(t)) : g.u32(static_cast<uint32_t>(t));
        g.str("tokenizer.ggml.scores");
        g.u32(9);
        g.u32(6);  // of FLOAT32
        g.u64(scores.size());
        for (float f : scores) g.f32(f);
        const std::string path = "/tmp/vllm_test_tokenizer_arrays_" + std::to_string(getpid()) + ".gguf";
        write_file(path, g.b.substr(0, g.b.size() - cut));
        return path;
    };

    const std::string good = write(false, 0);
    const TokenizerData d = TokenizerData::from_gguf(GgufFile(good));
    check(d.tokens == texts, "packed string array reads back");
    check(d.token_types == types, "packed INT32 array reads back");
    check(d.scores == scores, "packed FLOAT32 array reads back");
    std::remove(good.c_str());

    const std::string wrong = write(true, 0);
    check_throws([&] { TokenizerData::from_gguf(GgufFile(wrong)); }, VLLM_ERR_MODEL_LOAD,
                 "'tokenizer.ggml.token_type' is not an array of integers", "an array of strings is no array of ints");
    std::remove(wrong.c_str());

    const std::string cut = write(false, 2);  // inside the last score
    check_throws([&] { GgufFile file(cut); }, VLLM_ERR_MODEL_LOAD, "truncated", "a cut packed array is refused");
    std::remove(cut.c_str());
}

// SentencePiece on a hand-made vocabulary (Gemma 3's real one is tested
// against llama.cpp in tests/models/test_tokenizer_gguf.py when present).
void test_sentencepiece() {
    TokenizerData d;
    d.model = "llama";
    const auto normal = static_cast<int32_t>(TokenType::NORMAL);
    const auto byte = static_cast<int32_t>(TokenType::BYTE);
    const auto control = static_cast<int32_t>(TokenType::CONTROL);
    auto add = [&](const std::string& text, float score, int32_t type) {
        d.tokens.push_back(text);
        d.scores.push_back(score);
        d.token_types.push_back(type);
        return static_cast<int32_t>(d.tokens.size() - 1);
    };
    d.unk_id = add("<unk>", 0, static_cast<int32_t>(TokenType::UNKNOWN));
    d.bos_id = add("<s>", 0, control);
    d.eos_id = add("</s>", 0, control);
    const int32_t xc3 = add("<0xC3>", 0, byte);
    const int32_t xa9 = add("<0xA9>", 0, byte);
    const int32_t space = add("\xE2\x96\x81", -1, normal);
    add("a", -1, normal);
    const int32_t b = add("b", -1, normal);
    const int32_t c = add("c", -1, normal);
    const int32_t ab = add("ab", -3, normal);
    const int32_t bc = add("bc", -2, normal);
    const int32_t space_a = add("\xE2\x96\x81" "a", -4, normal);
    d.add_bos = true;
    d.add_space_prefix = true;
    const auto tok = Tokenizer::create(d);
    check(tok->encode("abc", false, true) == (std::vector<int32_t>{space_a, bc}),
          "SentencePiece: the space prefix, then the best-scored bigram first");
    check(tok->encode("abc", true, true) == (std::vector<int32_t>{d.bos_id, space_a, bc}), "SentencePiece: BOS");
    check(tok->encode("a b\xC3\xA9", false, true) == (std::vector<int32_t>{space_a, space, b, xc3, xa9}),
          "SentencePiece: spaces escaped, unknown characters as byte tokens");
    check(tok->encode("<s>ab", false, true) == (std::vector<int32_t>{d.bos_id, space, ab}),
          "SentencePiece: a space prefix after a special token");
    check(decode(*tok, {space_a, b, xc3, xa9, d.eos_id}, true) == " ab\xC3\xA9",
          "SentencePiece: U+2581 decodes as a space, <0xNN> as its byte");
    d.add_space_prefix = false;
    check(Tokenizer::create(d)->encode("ab c", false, true) == (std::vector<int32_t>{ab, space, c}),
          "SentencePiece: no space prefix when the model says so");
    TokenizerData bad = d;
    bad.scores.pop_back();
    check_throws([&] { Tokenizer::create(bad); }, VLLM_ERR_MODEL_LOAD, "scores", "SentencePiece: a score per token");
}

void test_invalid_input(const Tokenizer& tok) {
    // llama.cpp turns each invalid byte into U+FFFD before splitting.
    const std::vector<int32_t> ids = tok.encode(std::string("a\xff\xfe" "b\xe4"), false, true);
    check(decode(tok, ids, false) == "a\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD", "invalid UTF-8 input becomes U+FFFD");
}

void report_speed(const Tokenizer& tok, const std::vector<GoldenSection>& sections) {
    const GoldenCase* longest = nullptr;
    for (const GoldenCase& c : sections.front().cases) {
        if (longest == nullptr || c.ids.size() > longest->ids.size()) longest = &c;
    }
    const int iterations = 300;
    size_t n_tokens = 0;
    for (int i = 0; i < 10; ++i) n_tokens = tok.encode(longest->text, false, true).size();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) n_tokens = tok.encode(longest->text, false, true).size();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / iterations;
    std::printf("encode speed: %zu tokens (%zu bytes) in %.1f us (%.1f M tokens/s)\n", n_tokens, longest->text.size(), us,
                n_tokens / us);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s MODEL.gguf GOLDEN.txt\n", argv[0]);
        return 2;
    }
    try {
        const GgufFile file(argv[1]);
        const TokenizerData data = TokenizerData::from_gguf(file);
        const std::vector<GoldenSection> sections = read_golden(argv[2]);
        check(!sections.empty() && sections.front().pre == "smollm", "golden file has the smollm section first");
        test_metadata(data);
        test_golden(data, sections);
        const auto tok = Tokenizer::create(data);
        test_incremental(*tok);
        test_special(data);
        test_errors(data);
        test_invalid_input(*tok);
        test_sentencepiece();
        test_packed_metadata_arrays();
        report_speed(*tok, sections);
    } catch (const std::exception& e) {
        check(false, std::string("unexpected exception: ") + e.what());
    }
    return report();
}
