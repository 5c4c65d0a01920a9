// The engine's reasoning gate (engine/reasoning_gate.h) with a tiny
// vocabulary and no model: a section open from the first token ends at its
// marker, a budget forces the marker's tokens once spent; a section the
// model opens itself (start markers: glm45's "<think>", mistral's
// "[THINK]", granite's phrases) is outside until an opener completes, even
// one written over several tokens, and its budget counts from there.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "engine/reasoning_gate.h"
#include "tokenizer/tokenizer.h"

using namespace vllm;

namespace {

// Control tokens 0-2, "<think>" and "</think>" whole (user-defined), then
// one token per character of kChars.
constexpr int32_t kThink = 3, kEndThink = 4;
const std::string kChars = "abcdefghijklmnopqrstuvwxyz<>/ ";

const Tokenizer& tiny_tokenizer() {
    static std::unique_ptr<Tokenizer> tokenizer = [] {
        TokenizerData data;
        data.model = "llama";
        data.tokens = {"<unk>", "<s>", "</s>", "<think>", "</think>"};
        data.token_types = {2, 3, 3, 4, 4};
        for (char c : kChars) {
            data.tokens.push_back(c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c));
            data.token_types.push_back(1);
        }
        data.scores.assign(data.tokens.size(), 0.0f);
        data.bos_id = 1;
        data.eos_id = 2;
        data.unk_id = 0;
        return Tokenizer::create(data);
    }();
    return *tokenizer;
}

int32_t char_token(char c) { return 5 + static_cast<int32_t>(kChars.find(c)); }

std::string text_of(int32_t token) {
    if (token == kThink) return "<think>";
    if (token == kEndThink) return "</think>";
    return std::string(1, kChars[static_cast<size_t>(token - 5)]);
}

// The only token force() leaves possible, or -1 when it leaves them all.
int32_t forced(const ReasoningGate& gate) {
    const int32_t vocab = tiny_tokenizer().vocab_size();
    std::vector<float> logits(static_cast<size_t>(vocab), 1.0f);
    gate.force(logits.data(), vocab);
    int32_t only = -1, possible = 0;
    for (int32_t id = 0; id < vocab; ++id)
        if (std::isfinite(logits[static_cast<size_t>(id)])) ++possible, only = id;
    return possible == 1 ? only : -1;
}

void accept(ReasoningGate& gate, int32_t token) { gate.accept(token, text_of(token)); }

void accept_text(ReasoningGate& gate, const std::string& text) {
    for (char c : text) accept(gate, char_token(c));
}

SamplingConfig::ReasoningSection section(int32_t budget, std::vector<std::string> starts = {}) {
    SamplingConfig::ReasoningSection s;
    s.end_marker = "</think>";
    s.forced_end = "</think>";
    s.token_budget = budget;
    s.start_markers = std::move(starts);
    return s;
}

void test_open_from_the_first_token() {
    ReasoningGate gate(section(3), tiny_tokenizer());
    check(gate.inside(), "open from the first token");
    accept_text(gate, "ab");
    check(forced(gate) == -1, "the budget is not spent after 2 of 3 tokens");
    accept_text(gate, "c");
    check(forced(gate) == kEndThink, "after 3 tokens the end marker is forced");
    accept(gate, kEndThink);
    check(!gate.inside() && forced(gate) == -1, "the forced marker ends the section");
}

void test_no_section() {
    SamplingConfig::ReasoningSection none;
    none.start_markers = {"<think>"};
    ReasoningGate gate(none, tiny_tokenizer());
    accept(gate, kThink);
    check(!gate.inside() && forced(gate) == -1, "no end marker: never inside, whatever the start markers");
}

void test_opened_by_the_model() {
    ReasoningGate gate(section(2, {"<think>"}), tiny_tokenizer());
    check(!gate.inside(), "a section the model opens starts outside");
    accept_text(gate, "hello there");
    check(!gate.inside() && forced(gate) == -1, "text before the opener is outside and not counted");
    accept(gate, kThink);
    check(gate.inside() && forced(gate) == -1, "the opener opens it, and is not counted");
    accept_text(gate, "ab");
    check(forced(gate) == kEndThink, "the budget counts from the opener");
    accept(gate, kEndThink);
    check(!gate.inside(), "the forced marker ends it");
    accept(gate, kThink);
    accept_text(gate, "abcdef");
    check(!gate.inside() && forced(gate) == -1, "a section opens once");
}

void test_opener_over_several_tokens() {
    ReasoningGate gate(section(1, {"[THINK]", "<think>"}), tiny_tokenizer());
    accept_text(gate, "x <thin");
    check(!gate.inside(), "half an opener is outside");
    accept_text(gate, "k>");
    check(gate.inside() && forced(gate) == -1, "an opener written in characters opens it");
    accept_text(gate, "z");
    check(forced(gate) == kEndThink, "a budget of 1: forced after one token");
}

void test_model_closes_within_budget() {
    ReasoningGate gate(section(10, {"<think>"}), tiny_tokenizer());
    accept(gate, kThink);
    accept_text(gate, "ab</think>");
    check(!gate.inside() && forced(gate) == -1, "closed by the model (in characters): nothing forced");
    accept_text(gate, "abcdefghijklmnop");
    check(forced(gate) == -1, "content after the section is never forced");
}

void test_budget_zero_after_opener() {
    ReasoningGate gate(section(0, {"<think>"}), tiny_tokenizer());
    accept_text(gate, "hi");
    check(forced(gate) == -1, "budget 0: nothing forced before the opener");
    accept(gate, kThink);
    check(forced(gate) == kEndThink, "budget 0: the end forced right after the opener");
}

}  // namespace

int main() {
    test_open_from_the_first_token();
    test_no_section();
    test_opened_by_the_model();
    test_opener_over_several_tokens();
    test_model_closes_within_budget();
    test_budget_zero_after_opener();
    return report();
}
