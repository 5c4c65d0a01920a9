// The OpenAI protocol room's tests with a scripted engine (chat, and the
// completions endpoint on the same fan-out stage): the service's own path from
// request to response (prompt rendering and tokenization, per-choice
// submissions and seeds, output parsing into reasoning / content / tool
// calls, logprobs, usage, the chunk stream, stops and errors) without a
// model's randomness. The scripted engine returns request streams already
// filled with the text a test chose, e.g. a hermes tool call that SmolLM2
// would not write by itself.
//
//   test_chat_service MODEL.gguf [SAMPLES_DIR]
//
// MODEL.gguf gives the tokenizer (SmolLM2's) and its chat template.
// SAMPLES_DIR (optional): where to write the responses (completion_*.json)
// and streams (stream_*.jsonl) for pytest to validate with the openai types.
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chat/chat_prompt.h"
#include "chat/choice_logprobs.h"
#include "chat/chat_service.h"
#include "chat/completion_call.h"
#include "chat/completion_service.h"
#include "formats/gguf_reader.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/json.h"
#include "util/utf8.h"
#include "check.h"

using namespace vllm;
using namespace vllm::chat;

namespace {

void check_throws(const std::function<void()>& body, vllm_status status, const std::string& needle,
                  const std::string& what) {
    try {
        body();
        check(false, what + ": no error");
    } catch (const Error& e) {
        check(e.status() == status && std::string(e.what()).find(needle) != std::string::npos,
              what + ": got '" + e.what() + "', expected it to contain '" + needle + "'");
    }
}

std::string g_samples_dir;

void write_sample(const std::string& name, const std::string& text) {
    if (g_samples_dir.empty()) return;
    std::ofstream(g_samples_dir + "/" + name) << text;
}

// What one scripted engine request produces.
struct Script {
    std::vector<std::string> pieces;  // the text of each engine step
    const char* finish_reason = "stop";
    vllm_status status = VLLM_OK;
    std::string error;
};

// Stands in for Engine::submit_tokens: records each submission and answers
// it with the next script, every step carrying its tokens' logprobs when the
// request asked for them (-0.5 each; the top list repeats the token).
class ScriptedEngine {
public:
    struct Submission {
        std::vector<int32_t> prompt_ids;
        SamplingConfig sampling;
        int32_t priority = 0;
        std::shared_ptr<RequestStream> stream;
    };

    explicit ScriptedEngine(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

    void expect(std::vector<Script> scripts) {
        scripts_ = std::move(scripts);
        submissions.clear();
    }

    ChatService::Submit submit() {
        return [this](std::vector<int32_t> ids, SamplingConfig sampling, int32_t priority) {
            if (submissions.size() >= scripts_.size()) throw_runtime("scripted engine: no script left");
            const Script& script = scripts_[submissions.size()];
            auto stream = std::make_shared<RequestStream>();
            stream->set_prompt_tokens(static_cast<int32_t>(ids.size()));
            for (const std::string& piece : script.pieces) {
                const std::vector<int32_t> tokens = tokenizer_.encode(piece, false, true);
                std::vector<vllm::TokenLogprob> logprobs;
                if (sampling.logprobs >= 0)
                    for (int32_t t : tokens) logprobs.push_back({t, -0.5f, {{t, -0.5f}}});
                stream->push_step(piece, tokens, std::move(logprobs));
            }
            stream->finish(script.finish_reason, script.status, script.error);
            submissions.push_back({std::move(ids), sampling, priority, stream});
            return stream;
        };
    }

    std::vector<Submission> submissions;

private:
    const Tokenizer& tokenizer_;
    std::vector<Script> scripts_;
};

struct Streamed {
    std::vector<json::Value> chunks;
    int terminal_calls = 0;
    std::string jsonl;
};

Streamed stream_all(const ChatService& service, const std::string& request, size_t stop_after = 0) {
    Streamed out;
    service.stream(request, [&](const std::string& chunk, bool finished) {
        if (finished) {
            ++out.terminal_calls;
            check(chunk.empty(), "the terminal call carries \"\"");
            return true;
        }
        out.chunks.push_back(json::parse(chunk));
        out.jsonl += chunk + "\n";
        return stop_after == 0 || out.chunks.size() < stop_after;
    });
    return out;
}

const json::Value& at(const json::Value& v, std::string_view key) {
    const json::Value* member = v.find(key);
    if (member == nullptr) throw_invalid_argument("test: missing member '" + std::string(key) + "'");
    return *member;
}

const json::Value& first_choice(const json::Value& response) { return at(response, "choices").items().at(0); }

const std::string kUserHi = R"({"role": "user", "content": "Hi"})";
const std::string kWeatherTool =
    R"({"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",)"
    R"( "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})";
const std::string kHermesCall = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

std::string request_with(const std::string& extra) {
    return "{\"messages\": [" + kUserHi + "]" + (extra.empty() ? "" : ", " + extra) + "}";
}

// ---------------------------------------------------------------- prompt

// A rendered prompt past max_model_len is refused before anything is
// submitted, in vLLM's words (what clients recognise as an overflow).
void test_context_overflow(const Tokenizer& tok, const std::string& smol_template) {
    ScriptedEngine engine(tok);
    ChatService service(tok, smol_template, "smol.gguf", {}, engine.submit(), 64);
    engine.expect({{{"Hello"}}});
    const size_t tokens = ChatService::prompt_ids(*service.prepare_request(request_with(""))).size();
    check(tokens < 64, "a short prompt fits");
    const std::string long_request = R"({"messages": [{"role": "user", "content": ")" + std::string(400, 'x') + R"("}]})";
    check_throws([&] { service.prepare_request(long_request); }, VLLM_ERR_INVALID_ARGUMENT,
                 "This model's maximum context length is 64 tokens. However, your request has ", "overflow refused");
    check_throws([&] { service.complete(long_request); }, VLLM_ERR_INVALID_ARGUMENT,
                 " input tokens. Please reduce the length of the input messages.", "overflow refused by complete");
    check(engine.submissions.empty(), "nothing submitted for an overflowing prompt");
}

void test_prompt(const Tokenizer& tok, const std::string& smol_template) {
    ScriptedEngine engine(tok);
    ChatService service(tok, smol_template, "smol.gguf", {}, engine.submit());
    engine.expect({{{"Hello"}}});
    service.complete(request_with(""));
    const std::string expected =
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
    check(engine.submissions.at(0).prompt_ids == tok.encode(expected, false, true),
          "SmolLM2's template rendered and tokenized with special tokens parsed, no BOS added");
    check(tok.encode(expected, false, true).front() == 1, "<|im_start|> is one token");

    ChatService plain(tok, "", "plain.gguf", {}, engine.submit());
    engine.expect({{{"Hello"}}});
    plain.complete(request_with(""));
    check(engine.submissions.at(0).prompt_ids == tok.encode("user: Hi\nassistant: ", false, true),
          "no template: the plain fallback");

    engine.expect({{{" Paris."}}});
    service.complete(R"({"messages": [)" + kUserHi +
                     R"(, {"role": "assistant", "content": "The capital is"}],)"
                     R"( "add_generation_prompt": false, "continue_final_message": true})");
    const std::string continued =
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nThe capital is";
    check(engine.submissions.at(0).prompt_ids == tok.encode(continued, false, true),
          "continue_final_message cuts the prompt after the final message");

    check(cut_after_final_message("A: x  \nEND", "x  \n") == "A: x  \n", "trailing whitespace kept when rendered");
    check(cut_after_final_message("A: x\nEND", "x  ") == "A: x", "trailing whitespace dropped when the template trims");
    check(cut_after_final_message("x A: x END", "x") == "x A: x", "the last occurrence");
    check_throws([&] { cut_after_final_message("A: y", "x"); }, VLLM_ERR_INVALID_ARGUMENT,
                 "does not appear", "continue_final_message with content not in the prompt");
    // An assistant turn that only called tools renders its null content as
    // "" (vLLM's rule), so continuing it keeps the whole rendering.
    engine.expect({{{"x"}}});
    service.complete(R"({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant",)"
                     R"( "content": null, "tool_calls": [{"id": "a", "type": "function",)"
                     R"( "function": {"name": "f", "arguments": "{}"}}]}],)"
                     R"( "add_generation_prompt": false, "continue_final_message": true})");
    check(engine.submissions.size() == 1, "SmolLM2's template continues a tool-call turn with null content");
}

// ---------------------------------------------------------------- choices

void test_choices_and_sampling(const Tokenizer& tok, const std::string& smol_template) {
    ScriptedEngine engine(tok);
    ChatService service(tok, smol_template, "smol.gguf", {}, engine.submit());
    engine.expect({{{"Hel", "lo"}}, {{"Bye"}, "length"}, {{"Yo", "!"}}});
    const json::Value response = json::parse(service.complete(request_with(
        R"("n": 3, "seed": 7, "max_tokens": 5, "stop": ["x"], "temperature": 0.5, "priority": -2)")));
    write_sample("completion_n3.json", json::dump(response));
    check(engine.submissions.size() == 3, "n=3: three engine requests");
    bool same_prompt = true, seeds = true, sampling = true;
    for (size_t i = 0; i < engine.submissions.size(); ++i) {
        const auto& s = engine.submissions[i];
        same_prompt = same_prompt && s.prompt_ids == engine.submissions[0].prompt_ids;
        seeds = seeds && s.sampling.has_seed && s.sampling.seed == 7 + i;
        sampling = sampling && s.sampling.max_tokens == 5 && s.sampling.stop == std::vector<std::string>{"x"} &&
                   s.sampling.temperature == 0.5f && s.priority == -2 && s.sampling.logprobs == -1;
    }
    check(same_prompt, "every choice gets the same prompt ids");
    check(seeds, "choice i samples with seed + i");
    check(sampling, "max_tokens, stop, temperature and priority reach the engine; no logprobs asked");
    const auto& choices = at(response, "choices").items();
    check(choices.size() == 3, "three choices");
    check(at(at(choices[0], "message"), "content").as_string() == "Hello" &&
              at(at(choices[1], "message"), "content").as_string() == "Bye" &&
              at(at(choices[2], "message"), "content").as_string() == "Yo!",
          "each choice has its own text");
    check(at(choices[1], "finish_reason").as_string() == "length" && at(choices[0], "finish_reason").as_string() == "stop",
          "finish reasons per choice");
    check(at(choices[2], "index").as_int() == 2 && at(choices[0], "logprobs").is_null(), "index; logprobs null");
    const json::Value& usage = at(response, "usage");
    const int64_t prompt = static_cast<int64_t>(engine.submissions[0].prompt_ids.size());
    const int64_t completion = static_cast<int64_t>(
        tok.encode("Hel", false, true).size() + tok.encode("lo", false, true).size() + tok.encode("Bye", false, true).size() +
        tok.encode("Yo", false, true).size() + tok.encode("!", false, true).size());
    check(at(usage, "prompt_tokens").as_int() == prompt, "usage counts the prompt once");
    check(at(usage, "completion_tokens").as_int() == completion, "usage sums the completion tokens of every choice");
    check(at(usage, "total_tokens").as_int() == prompt + completion, "total tokens");
    check(at(response, "model").as_string() == "smol.gguf" && at(response, "object").as_string() == "chat.completion",
          "model and object");

    engine.expect({{{"A"}}, {{"B"}}});
    service.complete(request_with(R"("n": 2)"));
    check(!engine.submissions[0].sampling.has_seed && !engine.submissions[1].sampling.has_seed,
          "no seed: choices stay unseeded");
}

void test_logprobs(const Tokenizer& tok, const std::string& smol_template) {
    ScriptedEngine engine(tok);
    ChatService service(tok, smol_template, "smol.gguf", {}, engine.submit());
    engine.expect({{{"Hello", " world"}}});
    const json::Value response =
        json::parse(service.complete(request_with(R"("logprobs": true, "top_logprobs": 2)")));
    write_sample("completion_logprobs.json", json::dump(response));
    check(engine.submissions.at(0).sampling.logprobs == 2, "top_logprobs reaches the engine");
    const auto& content = at(at(first_choice(response), "logprobs"), "content").items();
    const std::vector<int32_t> ids = tok.encode("Hello world", false, true);
    check(content.size() == ids.size(), "one logprob entry per generated token");
    std::string joined;
    for (const json::Value& entry : content) joined += at(entry, "token").as_string();
    check(joined == "Hello world", "logprob tokens are the token texts");
    check(!content.empty() && at(content[0], "logprob").as_double() == -0.5 &&
              at(content[0], "top_logprobs").items().size() == 1 && at(content[0], "bytes").is_array(),
          "logprob, top_logprobs and bytes");

    engine.expect({{{"Hello", " world"}}});
    const Streamed streamed = stream_all(service, request_with(R"("logprobs": true, "stream": true)"));
    write_sample("stream_logprobs.jsonl", streamed.jsonl);
    size_t streamed_entries = 0;
    for (const json::Value& chunk : streamed.chunks) {
        const auto& choices = at(chunk, "choices").items();
        if (choices.empty()) continue;
        const json::Value& lp = at(choices[0], "logprobs");
        if (!lp.is_null()) streamed_entries += at(lp, "content").size();
    }
    check(engine.submissions.at(0).sampling.logprobs == 0, "logprobs without top_logprobs: 0 alternatives");
    check(streamed_entries == ids.size(), "the streamed logprobs cover every token once");
}

// ---------------------------------------------------------------- parsers

void test_tool_calls(const Tokenizer& tok, const std::string& smol_template) {
    ScriptedEngine engine(tok);
    ChatService service(tok, smol_template, "smol.gguf", {"hermes", ""}, engine.submit());
    const std::string request = request_with("\"tools\": [" + kWeatherTool + "]");

    // The call arrives in pieces that cut the tags.
    engine.expect({{{"<tool", "_call>\n{\"name\": \"get_", "weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_",
                     "call>"}}});
    const json::Value response = json::parse(service.complete(request));
    write_sample("completion_tool_call.json", json::dump(response));
    const json::Value& choice = first_choice(response);
    check(at(choice, "finish_reason").as_string() == "tool_calls", "a parsed call finishes with tool_calls");
    const json::Value& message = at(choice, "message");
    check(at(message, "content").is_null(), "content null when the message is only calls");
    const auto& calls = at(message, "tool_calls").items();
    check(calls.size() == 1 && at(at(calls[0], "function"), "name").as_string() == "get_weather" &&
              at(at(calls[0], "function"), "arguments").as_string() == "{\"city\": \"Paris\"}" &&
              at(calls[0], "id").as_string().rfind("call_", 0) == 0,
          "the hermes call with its name, arguments and id");

    engine.expect({{{"Let me check. ", kHermesCall}}});
    const Streamed streamed = stream_all(service, request_with("\"tools\": [" + kWeatherTool + "], \"stream\": true"));
    write_sample("stream_tool_call.jsonl", streamed.jsonl);
    std::string content;
    int call_deltas = 0;
    std::string finish;
    for (const json::Value& chunk : streamed.chunks) {
        const json::Value& c = at(chunk, "choices").items().at(0);
        const json::Value& delta = at(c, "delta");
        if (const json::Value* text = delta.find("content"); text != nullptr && text->is_string()) content += text->as_string();
        if (const json::Value* tc = delta.find("tool_calls")) call_deltas += static_cast<int>(tc->size());
        if (!at(c, "finish_reason").is_null()) finish = at(c, "finish_reason").as_string();
    }
    engine.expect({{{"Let me check. ", kHermesCall}}});
    const json::Value whole = json::parse(service.complete(request));
    const json::Value& whole_message = at(first_choice(whole), "message");
    check(content == at(whole_message, "content").as_string() && content.rfind("Let me check.", 0) == 0 &&
              call_deltas == 1 && at(whole_message, "tool_calls").size() == 1 && finish == "tool_calls",
          "streamed: the content before the call, then one call delta, finish tool_calls, as the whole response");

    engine.expect({{{kHermesCall}}});
    const json::Value none = json::parse(service.complete(request_with("\"tools\": [" + kWeatherTool +
                                                                       "], \"tool_choice\": \"none\"")));
    check(at(at(first_choice(none), "message"), "content").as_string() == kHermesCall &&
              at(first_choice(none), "finish_reason").as_string() == "stop",
          "tool_choice none: the markup stays content");

    engine.expect({{{kHermesCall}}});
    const json::Value no_tools = json::parse(service.complete(request_with("")));
    check(!at(first_choice(no_tools), "message").contains("tool_calls"), "no tools in the request: no parsing");

    ChatService undetected(tok, smol_template, "smol.gguf", {}, engine.submit());
    check_throws([&] { undetected.complete(request); }, VLLM_ERR_INVALID_ARGUMENT, "tool_parser",
                 "tools with tool_choice auto and no tool parser");
    ChatService detected(tok, "{{ '<tool_call>' }}{{ messages[0]['content'] }}", "t.gguf", {}, engine.submit());
    engine.expect({{{kHermesCall}}});
    const json::Value via_detection = json::parse(detected.complete(request));
    check(at(first_choice(via_detection), "finish_reason").as_string() == "tool_calls",
          "the tool parser detected from the template's markers");
}

void test_reasoning(const Tokenizer& tok, const std::string& smol_template) {
    ScriptedEngine engine(tok);
    ChatService service(tok, smol_template, "smol.gguf", {"", "deepseek_r1"}, engine.submit());
    engine.expect({{{"Two plus", " two.</th", "ink>Four."}}});
    const json::Value response = json::parse(service.complete(request_with("")));
    write_sample("completion_reasoning.json", json::dump(response));
    const json::Value& message = at(first_choice(response), "message");
    check(at(message, "reasoning_content").as_string() == "Two plus two." && at(message, "content").as_string() == "Four.",
          "deepseek_r1 splits reasoning from content");

    engine.expect({{{"Two plus", " two.</th", "ink>Four."}}});
    const Streamed streamed = stream_all(service, request_with(R"("stream": true, "stream_options": {"include_usage": true})"));
    write_sample("stream_reasoning.jsonl", streamed.jsonl);
    std::string reasoning, content;
    for (const json::Value& chunk : streamed.chunks) {
        if (at(chunk, "choices").items().empty()) continue;
        const json::Value& delta = at(at(chunk, "choices").items()[0], "delta");
        if (const json::Value* r = delta.find("reasoning_content")) reasoning += r->as_string();
        if (const json::Value* c = delta.find("content"); c != nullptr && c->is_string()) content += c->as_string();
    }
    check(reasoning == "Two plus two." && content == "Four.", "the streamed split adds up to the same");

    ChatService off(tok, "{{ '<think>' }}{{ messages[0]['content'] }}", "r.gguf", {"", "none"}, engine.submit());
    engine.expect({{{"a</think>b"}}});
    const json::Value plain = json::parse(off.complete(request_with("")));
    check(at(at(first_choice(plain), "message"), "content").as_string() == "a</think>b" &&
              !at(first_choice(plain), "message").contains("reasoning_content"),
          "reasoning_parser none turns detection off");
}

// ---------------------------------------------------------------- logprob shapes

// The one renderer's completions shapes (chat's is test_logprobs'): the
// legacy object as server/serving_completion.py's _legacy_logprobs writes
// it, vLLM's prompt_logprobs as its _vllm_prompt_logprobs does.
void test_logprob_shapes(const Tokenizer& tok) {
    const std::vector<int32_t> ids = tok.encode("Hello world", false, true);
    check(ids.size() >= 2, "two tokens at least");
    std::vector<vllm::TokenLogprob> entries;
    for (const int32_t id : ids) entries.push_back({id, -0.5f, {{id, -0.5f}, {ids[0], -1.5f}, {ids[0], -2.5f}}, 1});
    const TokenNaming naming(tok, false);
    size_t offset = 0;
    const json::Value legacy = legacy_logprobs({"Hi"}, entries, naming, offset);
    const auto& tokens = at(legacy, "tokens").items();
    const auto& offsets = at(legacy, "text_offset").items();
    check(tokens.size() == ids.size() + 1 && tokens[0].as_string() == "Hi" && at(legacy, "token_logprobs").items()[0].is_null() &&
              at(legacy, "top_logprobs").items()[0].is_null(),
          "an unpredicted name first, with null logprobs");
    std::string joined;
    bool offsets_follow = true;
    for (size_t i = 0; i < tokens.size(); ++i) {
        offsets_follow = offsets_follow && offsets[i].as_int() == static_cast<int64_t>(joined.size());
        joined += tokens[i].as_string();
    }
    check(joined == "HiHello world" && offsets_follow && offset == joined.size(), "tokens' texts and their offsets");
    const json::Value& top = at(legacy, "top_logprobs").items()[1];
    check(top.members().size() == 1 && at(top, tokens[1].as_string()).as_double() == -2.5,
          "top_logprobs as a dict: a name given twice keeps its last value");
    check(at(legacy, "token_logprobs").items()[1].as_double() == -0.5, "the token's own logprob");
    size_t continued = 7;
    const json::Value more = legacy_logprobs({}, {entries[1]}, naming, continued);
    check(at(more, "text_offset").items()[0].as_int() == 7, "a stream's chunk continues the offsets");
    size_t ignored = 0;
    const json::Value as_ids = legacy_logprobs({}, entries, TokenNaming(tok, true), ignored);
    check(at(as_ids, "tokens").items()[0].as_string() == "token_id:" + std::to_string(ids[0]), "token_id:<id> names");

    // A token that holds part of a character is named with U+FFFD, counted as one character.
    bool partial_seen = false;
    for (const int32_t id : tok.encode("\xF0\x9F\xA6\x99 \xE4\xB8\xAD\xE6\x96\x87", false, true)) {
        const std::string text = naming.text(id);
        check(utf8::is_valid(text), "a token's text is valid UTF-8");
        if (!utf8::is_valid(tok.token_bytes(id, false))) partial_seen = partial_seen || text.find("\xEF\xBF\xBD") != std::string::npos;
    }
    check(partial_seen, "a partial character's token reads as U+FFFD");

    const json::Value prompt = prompt_logprobs_json({entries.begin() + 1, entries.end()}, tok);
    check(prompt.items().size() == ids.size() && prompt.items()[0].is_null(), "null for the prompt's first token");
    const json::Value& second = prompt.items()[1];
    const std::string own = std::to_string(ids[1]);
    check(second.members().front().first == own && at(at(second, own), "rank").as_int() == 1 &&
              at(at(second, own), "decoded_token").as_string() == detokenized(tok, {ids[1]}),
          "the token's own entry first, with its rank and text");
    check(at(at(second, std::to_string(ids[0])), "rank").as_int() == 2 &&
              at(at(second, std::to_string(ids[0])), "logprob").as_double() == -1.5,
          "an alternative named twice keeps its first rank");
}

// ---------------------------------------------------------------- stream

void test_stream_shape(const Tokenizer& tok, const std::string& smol_template) {
    ScriptedEngine engine(tok);
    ChatService service(tok, smol_template, "smol.gguf", {}, engine.submit());
    engine.expect({{{"Hel", "lo"}}, {{"Bye"}, "length"}});
    const Streamed s =
        stream_all(service, request_with(R"("n": 2, "stream": true, "stream_options": {"include_usage": true})"));
    write_sample("stream_n2_usage.jsonl", s.jsonl);
    // role, "Hel", "lo", finish | role, "Bye", finish | usage
    check(s.chunks.size() == 8, "n=2 stream: 3 + 1 + 3 chunks... got " + std::to_string(s.chunks.size()));
    check(s.terminal_calls == 1, "one terminal call");
    std::string texts[2];
    std::string finishes[2];
    bool same_id = true;
    for (const json::Value& chunk : s.chunks) {
        same_id = same_id && at(chunk, "id") == at(s.chunks[0], "id");
        for (const json::Value& c : at(chunk, "choices").items()) {
            const int64_t i = at(c, "index").as_int();
            if (const json::Value* t = at(c, "delta").find("content"); t != nullptr && t->is_string())
                texts[i] += t->as_string();
            if (!at(c, "finish_reason").is_null()) finishes[i] = at(c, "finish_reason").as_string();
        }
    }
    check(same_id, "every chunk shares the id");
    check(texts[0] == "Hello" && texts[1] == "Bye", "each choice's deltas");
    check(finishes[0] == "stop" && finishes[1] == "length", "each choice's finish chunk");
    check(at(at(s.chunks.front(), "choices").items()[0], "delta").find("role") != nullptr, "role chunk first");
    // vLLM's order: every choice's role chunk, then the choices' events
    // interleaved as they are generated (role 0, role 1, "Hel", "Bye", "lo",
    // finish 1, finish 0), then usage.
    std::vector<int64_t> order;
    for (size_t k = 0; k + 1 < s.chunks.size(); ++k) order.push_back(at(at(s.chunks[k], "choices").items()[0], "index").as_int());
    check(order == std::vector<int64_t>{0, 1, 0, 1, 0, 1, 0}, "streamed choices interleave (vLLM's order)");
    check(at(at(s.chunks[1], "choices").items()[0], "delta").find("role") != nullptr,
          "every choice's role chunk comes before any content");
    const json::Value& last = s.chunks.back();
    check(at(last, "choices").items().empty() && at(at(last, "usage"), "completion_tokens").as_int() ==
                                                     static_cast<int64_t>(tok.encode("Hel", false, true).size() +
                                                                          tok.encode("lo", false, true).size() +
                                                                          tok.encode("Bye", false, true).size()),
          "the usage chunk comes last, summed over the choices");

    engine.expect({{{"A", "B", "C"}}, {{"D"}}});
    const Streamed stopped = stream_all(service, request_with(R"("n": 2, "stream": true)"), 2);
    check(stopped.chunks.size() == 2 && stopped.terminal_calls == 0, "a sink that stops gets no further call");
    bool all_cancelled = true;
    for (const auto& sub : engine.submissions) all_cancelled = all_cancelled && sub.stream->cancel_requested();
    check(all_cancelled, "a stop cancels every choice");
}

// ---------------------------------------------------------------- errors

void test_errors(const Tokenizer& tok, const std::string& smol_template) {
    ScriptedEngine engine(tok);
    check_throws([&] { ChatService(tok, smol_template, "m", {"nope", ""}, engine.submit()); },
                 VLLM_ERR_INVALID_ARGUMENT, "unknown tool_parser 'nope'", "unknown tool parser");
    check_throws([&] { ChatService(tok, smol_template, "m", {"", "nope"}, engine.submit()); },
                 VLLM_ERR_INVALID_ARGUMENT, "unknown reasoning_parser 'nope'", "unknown reasoning parser");
    check_throws([&] { ChatService(tok, "{% for m in messages %}", "m", {}, engine.submit()); },
                 VLLM_ERR_INVALID_ARGUMENT, "chat template line", "a template that does not parse");

    ChatService raising(tok, "{% if messages[0]['role'] != 'system' %}{{ raise_exception('a system message is required') }}{% endif %}ok",
                        "m", {}, engine.submit());
    engine.expect({});
    check_throws([&] { raising.complete(request_with("")); }, VLLM_ERR_INVALID_ARGUMENT,
                 "chat template error: a system message is required", "raise_exception in the template");
    check_throws([&] { stream_all(raising, request_with("")); }, VLLM_ERR_INVALID_ARGUMENT,
                 "a system message is required", "raise_exception when streaming");
    check(engine.submissions.empty(), "nothing submitted for a template error");

    ChatService service(tok, smol_template, "smol.gguf", {}, engine.submit());
    check_throws([&] { service.complete("{"); }, VLLM_ERR_INVALID_ARGUMENT, "invalid JSON", "malformed JSON");
    check_throws([&] { service.complete(R"({"messages": "hi"})"); }, VLLM_ERR_INVALID_ARGUMENT, "messages",
                 "messages of the wrong type");
    check_throws([&] { service.complete(request_with(R"("temperature": "hot")")); }, VLLM_ERR_INVALID_ARGUMENT,
                 "temperature", "temperature of the wrong type");
    check_throws([&] { service.complete(request_with(R"("top_p": 0)")); }, VLLM_ERR_INVALID_ARGUMENT, "top_p",
                 "top_p out of range (the engine's own check)");

    Script failing{{"par"}, "stop", VLLM_ERR_RUNTIME, "kernel failed"};
    engine.expect({{{"fine"}}, failing});
    check_throws([&] { service.complete(request_with(R"("n": 2)")); }, VLLM_ERR_RUNTIME, "kernel failed",
                 "an engine failure is the failing request's status");
    engine.expect({failing});
    int terminal = 0;
    check_throws(
        [&] {
            service.stream(request_with(""), [&](const std::string&, bool finished) {
                terminal += finished ? 1 : 0;
                return true;
            });
        },
        VLLM_ERR_RUNTIME, "kernel failed", "streamed engine failure");
    check(terminal == 1, "a failed stream still ends with the terminal call");
}


// ------------------------------------------------------------ completions

// Runs a completions request on its own queue; the texts it delivers (the
// terminal call's "" left out) and how it ended.
struct CompletionRun {
    std::vector<json::Value> texts;
    ChoiceCall::Outcome outcome;
};

CompletionRun run_completion(const CompletionService& service, const std::string& request) {
    CompletionRun out;
    const auto call = service.start(service.prepare_request(request), std::make_shared<ReadyQueue>(), 0);
    call->deliver([&](const std::string& text, bool) {
        if (!text.empty()) out.texts.push_back(json::parse(text));
        return true;
    });
    call->detach();
    out.outcome = call->outcome();
    return out;
}

void test_completions(const Tokenizer& tok) {
    ScriptedEngine engine(tok);
    CompletionService service(tok, "smol.gguf", engine.submit());

    // Two prompts x n=2: four engine requests, numbered prompt-major, the
    // seed of choice i of each prompt seed + i (the fan-out chat uses).
    engine.expect({{{"a"}}, {{"b"}}, {{"c"}, "length"}, {{"d"}}});
    CompletionRun whole = run_completion(service, R"({"prompt": ["Hi", [1, 2, 3]], "n": 2, "seed": 7})");
    check(whole.outcome.status == VLLM_OK && whole.texts.size() == 1, "one text_completion response");
    check(engine.submissions.size() == 4, "n choices per prompt");
    check(engine.submissions[0].sampling.seed == 7 && engine.submissions[1].sampling.seed == 8 &&
              engine.submissions[2].sampling.seed == 7 && engine.submissions[3].sampling.seed == 8,
          "choice i of each prompt samples with seed + i");
    check(engine.submissions[2].prompt_ids == std::vector<int32_t>{1, 2, 3}, "token id prompts run as given");
    const json::Value& response = whole.texts[0];
    check(at(response, "object").as_string() == "text_completion" &&
              at(response, "id").as_string().rfind("cmpl-", 0) == 0,
          "the response's object and id");
    const auto& choices = at(response, "choices").items();
    std::string texts;
    for (size_t i = 0; i < choices.size(); ++i) {
        check(at(choices[i], "index").as_int() == static_cast<int64_t>(i), "choices in index order");
        texts += at(choices[i], "text").as_string();
    }
    check(texts == "abcd" && at(choices[2], "finish_reason").as_string() == "length", "each choice's text, finish");
    check(at(at(response, "usage"), "prompt_tokens").as_int() ==
              static_cast<int64_t>(engine.submissions[0].prompt_ids.size() + 3),
          "usage counts each prompt once, whatever n is");

    // Streaming: the choices interleave as they are generated (the order
    // chat streams in), finish chunks, then usage when asked for.
    engine.expect({{{"x", "y"}}, {{"z"}}});
    CompletionRun streamed = run_completion(
        service, R"({"prompt": "Hi", "n": 2, "stream": true, "stream_options": {"include_usage": true}})");
    std::vector<int64_t> order;
    for (size_t k = 0; k + 1 < streamed.texts.size(); ++k)
        order.push_back(at(at(streamed.texts[k], "choices").items()[0], "index").as_int());
    check(order == std::vector<int64_t>{0, 1, 0, 1, 0}, "streamed choices interleave (vLLM's order)");
    check(at(streamed.texts.back(), "choices").items().empty() &&
              at(at(streamed.texts.back(), "usage"), "completion_tokens").as_int() > 0,
          "the usage chunk comes last");

    // Echo with logprobs: the prompt first, its first token unpredicted.
    engine.expect({{{" there"}}});
    CompletionRun echoed = run_completion(service, R"({"prompt": "Hi", "echo": true, "logprobs": 1})");
    const json::Value& echo_choice = at(echoed.texts[0], "choices").items()[0];
    check(at(echo_choice, "text").as_string() == "Hi there", "echo puts the prompt first");
    check(at(at(echo_choice, "logprobs"), "token_logprobs").items()[0].is_null(),
          "the echoed prompt's first token has no logprob");
    check(engine.submissions[0].sampling.prompt_logprobs == 1, "echo with logprobs asks for the prompt's");

    // Refusals name the field, in chat's words for the shared ones.
    check_throws([&] { service.prepare_request(R"({"prompt": "Hi", "max_tokens": 0})"); },
                 VLLM_ERR_INVALID_ARGUMENT, "0 only with echo", "max_tokens 0 without echo");
    check_throws([&] { service.prepare_request(R"({"prompt": []})"); }, VLLM_ERR_INVALID_ARGUMENT, "'prompt'",
                 "an empty prompt list");
    check_throws([&] { service.prepare_request(R"({"prompt": "Hi", "n": 0})"); }, VLLM_ERR_INVALID_ARGUMENT,
                 "'n' must be between 1 and 128", "n out of range, as chat words it");
    check_throws([&] { service.prepare_request(R"({"prompt": "Hi", "best_of": 3})"); }, VLLM_ERR_INVALID_ARGUMENT,
                 "best_of", "best_of other than n");

    // A failing choice fails the call; the others are cancelled and the
    // call ends (its terminal event) only once the engine let go of them.
    Script failing{{"par"}, "stop", VLLM_ERR_RUNTIME, "kernel failed"};
    engine.expect({failing, {{"fine"}}, {{"fine too"}}});
    CompletionRun failed = run_completion(service, R"({"prompt": "Hi", "n": 3})");
    check(failed.outcome.status == VLLM_ERR_RUNTIME && failed.texts.empty(), "a failed choice fails the call");
    bool all_done = true;
    for (const auto& sub : engine.submissions) all_done = all_done && sub.stream->engine_done();
    check(all_done, "no choice outlives the failed call");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s MODEL.gguf [SAMPLES_DIR]\n", argv[0]);
        return 2;
    }
    if (argc > 2) g_samples_dir = argv[2];
    try {
        const GgufFile file(argv[1]);
        const auto tok = Tokenizer::create(TokenizerData::from_gguf(file));
        const std::string smol_template = file.get_string("tokenizer.chat_template", "");
        check(!smol_template.empty(), "the model has a chat template");
        test_prompt(*tok, smol_template);
        test_context_overflow(*tok, smol_template);
        test_choices_and_sampling(*tok, smol_template);
        test_logprobs(*tok, smol_template);
        test_tool_calls(*tok, smol_template);
        test_reasoning(*tok, smol_template);
        test_logprob_shapes(*tok);
        test_stream_shape(*tok, smol_template);
        test_errors(*tok, smol_template);
        test_completions(*tok);
    } catch (const std::exception& e) {
        check(false, std::string("unexpected exception: ") + e.what());
    }
    return report();
}
