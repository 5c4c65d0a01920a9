// The output processor with a tiny SentencePiece vocabulary and no model:
// the text that could start a stop string held back across deltas (and
// released as the text moves on), min_tokens before stop strings apply,
// end-of-generation ids (and ignore_eos), the length limit releasing what
// was held, a code point split over byte tokens held until complete,
// finish() for a grammar that ends the output, stop_token_ids,
// include_stop_str_in_output and skip_special_tokens false.
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "engine/output_processor.h"
#include "tokenizer/tokenizer.h"

using namespace vllm;

namespace {

constexpr int32_t kEos = 2;
constexpr int32_t kEot = 3;  // a second end-of-generation id
constexpr int32_t kByteC3 = 4, kByteA9 = 5;  // <0xC3> <0xA9>: "é" in two tokens

const Tokenizer& tiny_tokenizer() {
    static std::unique_ptr<Tokenizer> tokenizer = [] {
        TokenizerData data;
        data.model = "llama";
        data.tokens = {"<unk>", "<s>", "</s>", "<eot>", "<0xC3>", "<0xA9>"};
        data.token_types = {2, 3, 3, 3, 6, 6};
        for (char c = 'a'; c <= 'z'; ++c) {
            data.tokens.push_back(std::string(1, c));
            data.token_types.push_back(1);
        }
        data.scores.assign(data.tokens.size(), 0.0f);
        data.bos_id = 1;
        data.eos_id = kEos;
        data.eot_id = kEot;
        data.unk_id = 0;
        return Tokenizer::create(data);
    }();
    return *tokenizer;
}

int32_t letter(char c) { return 6 + (c - 'a'); }

// Feeds `ids` as generated tokens 1, 2, ...; the deltas joined by '|' and
// the finish reason ("" while running).
struct Fed {
    std::string deltas;
    std::string reason;
};

Fed feed(OutputProcessor& p, const std::vector<int32_t>& ids, int max_tokens = 100) {
    Fed out;
    int n = 0;
    for (int32_t id : ids) {
        ++n;
        OutputProcessor::Update u = p.push(id, n, n >= max_tokens);
        out.deltas += (n > 1 ? "|" : "") + u.delta;
        if (u.finish_reason != nullptr) {
            out.reason = u.finish_reason;
            break;
        }
    }
    return out;
}

std::vector<int32_t> letters(const std::string& text) {
    std::vector<int32_t> ids;
    for (char c : text) ids.push_back(letter(c));
    return ids;
}

// One generation: stop strings, min_tokens and max_tokens, the tokens fed,
// and the deltas and finish reason expected.
struct Case {
    const char* what;
    std::vector<std::string> stop;
    int min_tokens;
    std::vector<int32_t> ids;
    int max_tokens;
    const char* deltas;
    const char* reason;  // "" while running
};

void test_cases() {
    const int32_t a = letter('a'), z = letter('z');
    const Case cases[] = {
        {"the last len(stop) - 1 bytes are held back, released as the text moves on", {"cde"}, 0,
         letters("abcdx"), 100, "||a|b|c", ""},
        {"a completed stop string ends the output without its text", {"cde"}, 0, letters("abcdef"), 100, "||a|b|",
         "stop"},
        {"the earliest match of any stop string wins, text before it released", {"xy", "b"}, 0, letters("axyz"), 100,
         "|a|", "stop"},
        {"stop strings apply only after min_tokens tokens", {"b"}, 2, letters("abab"), 100, "a|b|a|", "stop"},
        {"the length limit releases all held text", {"bcd"}, 0, letters("abc"), 3, "||abc", "length"},
        {"an end-of-generation id stops and releases the held text", {"cd"}, 0, {a, letter('c'), kEot, a}, 100,
         "|a|c", "stop"},
        {"a code point split over two tokens is released whole", {}, 0, {a, kByteC3, kByteA9, letter('b')}, 100,
         "a||\xC3\xA9|b", ""},
        {"the held tail never splits a code point", {"zz"}, 0, {kByteC3, kByteA9, z, a}, 100, "||\xC3\xA9|z", ""},
    };
    for (const Case& c : cases) {
        SamplingConfig config;
        config.stop = c.stop;
        config.min_tokens = c.min_tokens;
        OutputProcessor p(tiny_tokenizer(), config);
        const Fed fed = feed(p, c.ids, c.max_tokens);
        check(fed.deltas == c.deltas && fed.reason == c.reason,
              std::string(c.what) + " (deltas " + fed.deltas + ", reason '" + fed.reason + "')");
    }
}

void test_finish_releases_held_text() {
    SamplingConfig config;
    config.stop = {"cde"};
    OutputProcessor p(tiny_tokenizer(), config);
    feed(p, letters("abcdx"));
    check(p.finish(finish_reason::kStop).delta == "dx", "finish() releases the held tail");
    const SamplingConfig plain;  // the processor keeps a reference
    OutputProcessor q(tiny_tokenizer(), plain);
    feed(q, {kByteC3});
    const OutputProcessor::Update end = q.finish(finish_reason::kStop);
    check(end.delta == "\xEF\xBF\xBD" && std::string(end.finish_reason) == "stop",
          "an unfinished code point at the end becomes U+FFFD");
}

void test_ignore_eos() {
    SamplingConfig config;
    config.ignore_eos = true;
    OutputProcessor p(tiny_tokenizer(), config);
    const Fed fed = feed(p, {letter('a'), kEos, letter('b')});
    check(fed.reason.empty() && fed.deltas == "a||b", "ignore_eos: EOS is a textless token (" + fed.deltas + ")");
}

void test_stop_token_ids() {
    SamplingConfig config;
    config.stop = {"xyz"};
    config.stop_token_ids = {kEos, letter('q')};
    config.ignore_eos = true;
    OutputProcessor p(tiny_tokenizer(), config);
    Fed fed = feed(p, letters("abxqzz"));
    check(fed.reason == "stop" && fed.deltas == "||a|bxq",
          "a stop token ends the output with its text, releasing the held tail (" + fed.deltas + ")");
    OutputProcessor eos(tiny_tokenizer(), config);
    fed = feed(eos, {letter('a'), kEos, letter('b')});
    check(fed.reason == "stop" && fed.deltas == "|a",
          "EOS named in stop_token_ids stops even with ignore_eos; a special token adds no text (" + fed.deltas + ")");
}

void test_special_tokens_kept() {
    SamplingConfig config;
    config.skip_special_tokens = false;
    OutputProcessor p(tiny_tokenizer(), config);
    const Fed fed = feed(p, {letter('a'), kEot});
    check(fed.reason == "stop" && fed.deltas == "a|", "EOS ends the output without its text all the same");
    OutputProcessor q(tiny_tokenizer(), config);
    const Fed bos = feed(q, {letter('a'), 1, letter('b')});
    check(bos.deltas == "a|<s>|b", "a control token's text is output (" + bos.deltas + ")");
}

void test_include_stop_str_in_output() {
    SamplingConfig config;
    config.stop = {"cd", "bcdx"};
    config.include_stop_str_in_output = true;
    OutputProcessor p(tiny_tokenizer(), config);
    const Fed fed = feed(p, letters("abcdx"));
    check(fed.reason == "stop" && fed.deltas == "|||abcd",
          "the earliest match's text stays in the output (" + fed.deltas + ")");
}

}  // namespace

int main() {
    test_cases();
    test_finish_releases_held_text();
    test_ignore_eos();
    test_stop_token_ids();
    test_include_stop_str_in_output();
    test_special_tokens_kept();
    return report();
}
