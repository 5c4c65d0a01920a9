// The checks the parser test programs share: a parser's whole-output
// result, and the same output streamed in every 2-way split, one byte at a
// time and in random pieces, must both equal what the model's markup means.
#pragma once
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "chat/chat_output_parser.h"
#include "chat/chat_request.h"
#include "chat/reasoning_parsers/reasoning_parser.h"
#include "chat/tool_parsers/tool_parser.h"
#include "check.h"

namespace vllm_test {

using namespace vllm;
using namespace vllm::chat;

inline std::string show(const std::string& s) {
    std::string out;
    for (char c : s) out += c == '\n' ? std::string("\\n") : std::string(1, c);
    return "'" + out + "'";
}

// Every way of cutting `text` into pieces that the tests stream.
inline std::vector<std::vector<std::string>> streamings(const std::string& text) {
    std::vector<std::vector<std::string>> out;
    for (size_t cut = 0; cut <= text.size(); ++cut) out.push_back({text.substr(0, cut), text.substr(cut)});
    std::vector<std::string> bytes;
    for (char c : text) bytes.emplace_back(1, c);
    out.push_back(bytes);
    std::mt19937 rng(1234);
    for (int round = 0; round < 20; ++round) {
        std::vector<std::string> pieces;
        size_t pos = 0;
        while (pos < text.size()) {
            const size_t len = std::uniform_int_distribution<size_t>(0, 7)(rng);
            pieces.push_back(text.substr(pos, len));
            pos += len;
        }
        out.push_back(pieces);
    }
    return out;
}

// ---------------------------------------------------------------- tools

using Calls = std::vector<std::pair<std::string, std::string>>;  // name, arguments

// Makes a parser that names its calls id0, id1, ...
using ParserFactory = std::function<std::unique_ptr<ToolParser>(ToolParser::IdGenerator)>;

inline std::unique_ptr<ToolParser> counting_parser(const ParserFactory& make) {
    auto counter = std::make_shared<int>(0);
    return make([counter] { return "id" + std::to_string((*counter)++); });
}

inline std::string describe(const ToolParseResult& r) {
    std::string s = "content=" + show(r.content) + " calls=[";
    for (const ToolCall& c : r.calls) s += c.id + ":" + c.name + " " + c.arguments + "; ";
    return s + "]";
}

// ids: the calls' expected ids when the markup names them (kimi_k2); empty: id0, id1, ...
inline bool same(const ToolParseResult& r, const std::string& content, const Calls& calls,
          const std::vector<std::string>& ids = {}) {
    if (r.content != content || r.calls.size() != calls.size()) return false;
    for (size_t i = 0; i < calls.size(); ++i) {
        if (r.calls[i].name != calls[i].first || r.calls[i].arguments != calls[i].second) return false;
        if (r.calls[i].id != (ids.empty() ? "id" + std::to_string(i) : ids[i])) return false;
    }
    return true;
}

inline void check_tools(const std::string& dialect, const ParserFactory& make, const std::string& label,
                 const std::string& output, const std::string& content, const Calls& calls,
                 const std::vector<std::string>& ids = {}) {
    const ToolParseResult whole = counting_parser(make)->parse_all(output);
    check(same(whole, content, calls, ids), dialect + " " + label + ": whole output gave " + describe(whole));
    int mismatches = 0;
    std::string first_bad;
    for (const auto& pieces : streamings(output)) {
        auto parser = counting_parser(make);
        ToolParseResult streamed;
        int next_index = 0;
        bool indices_ok = true;
        auto take = [&](const ToolDelta& d) {
            // A call's first delta takes the next index; its argument fragments repeat it.
            for (const ToolCallDelta& c : d.calls)
                indices_ok = indices_ok && (c.continues() ? c.index == next_index - 1 : c.index == next_index++);
            accumulate(streamed, d);
        };
        for (const std::string& piece : pieces) take(parser->feed(piece));
        take(parser->finish());
        if (!same(streamed, content, calls, ids) || !indices_ok) {
            if (mismatches++ == 0) first_bad = describe(streamed) + " from " + std::to_string(pieces.size()) + " pieces";
        }
    }
    check(mismatches == 0, dialect + " " + label + ": " + std::to_string(mismatches) + " streamings differ, e.g. " + first_bad);
}

// Streamed a byte at a time, `output`'s one call comes in pieces as vLLM
// streams it: a first delta naming it with `first_piece` of its arguments,
// then at least `min_fragments` deltas of the same index with argument
// fragments only, adding up to `arguments`.
inline void check_streams_in_pieces(const std::string& label, const ParserFactory& make, const std::string& output,
                                    const std::string& name, const std::string& first_piece,
                                    const std::string& arguments, size_t min_fragments = 3) {
    auto parser = counting_parser(make);
    std::vector<ToolCallDelta> deltas;
    for (char c : output)
        for (const ToolCallDelta& d : parser->feed(std::string(1, c)).calls) deltas.push_back(d);
    for (const ToolCallDelta& d : parser->finish().calls) deltas.push_back(d);
    std::string joined = deltas.empty() ? "" : deltas[0].call.arguments;
    bool fragments = deltas.size() > min_fragments;
    for (size_t i = 1; i < deltas.size(); ++i) {
        fragments = fragments && deltas[i].continues() && deltas[i].index == 0;
        joined += deltas[i].call.arguments;
    }
    check(!deltas.empty() && deltas[0].call.name == name && deltas[0].call.arguments == first_piece && fragments &&
              joined == arguments,
          label + " streams the name, then argument pieces (" + std::to_string(deltas.size()) + " deltas, first " +
              (deltas.empty() ? std::string("none") : show(deltas[0].call.arguments)) + ", joined " + show(joined) + ")");
}

inline ParserFactory dialect_parser(const std::string& dialect) {
    return [dialect](ToolParser::IdGenerator ids) { return make_tool_parser(dialect, std::move(ids)); };
}

inline void check_tools(const std::string& dialect, const std::string& label, const std::string& output,
                 const std::string& content, const Calls& calls) {
    check_tools(dialect, dialect_parser(dialect), label, output, content, calls);
}

// ------------------------------------------------------------ reasoning

inline ChatRequest request_with(const std::string& json) { return parse_chat_request(json); }

inline const ChatRequest& plain_request() {
    static const ChatRequest r = request_with(R"({"messages": [{"role": "user", "content": "hi"}]})");
    return r;
}

inline void check_reasoning(const std::string& dialect, const std::string& label, const ChatRequest& request,
                     const std::string& prompt, const std::string& output, const std::string& reasoning,
                     const std::string& content) {
    const ReasoningDelta whole = make_reasoning_parser(dialect, request, prompt)->parse_all(output);
    check(whole.reasoning == reasoning && whole.content == content,
          dialect + " " + label + ": whole output gave reasoning=" + show(whole.reasoning) + " content=" + show(whole.content));
    int mismatches = 0;
    for (const auto& pieces : streamings(output)) {
        auto parser = make_reasoning_parser(dialect, request, prompt);
        std::string r, c;
        for (const std::string& piece : pieces) {
            const ReasoningDelta d = parser->feed(piece);
            r += d.reasoning;
            c += d.content;
        }
        const ReasoningDelta d = parser->finish();
        r += d.reasoning;
        c += d.content;
        mismatches += r != reasoning || c != content;
    }
    check(mismatches == 0, dialect + " " + label + ": " + std::to_string(mismatches) + " streamings differ");
}

// ------------------------------------------------------------ together

// What a client reassembles from a choice's stream: `pieces` fed to `parser`, then finish().
inline ChoiceParts streamed_choice(ChatOutputParser parser, const std::vector<std::string>& pieces) {
    ChoiceParts out;
    std::string reasoning;
    auto take = [&](const ChoiceDelta& d) {
        reasoning += d.reasoning;
        out.content += d.content;
        for (const ToolCallDelta& c : d.tool_calls) {
            if (c.continues()) out.tool_calls.at(static_cast<size_t>(c.index)).arguments += c.call.arguments;
            else out.tool_calls.push_back(c.call);
        }
    };
    for (const std::string& piece : pieces) take(parser.feed(piece));
    take(parser.finish());
    if (!reasoning.empty()) out.reasoning = reasoning;
    return out;
}

// ------------------------------------------------------------ fuzz

// Whether `output` fed in random pieces of 1 to 6 bytes gives what
// parse_all gives (content, calls and their ids).
inline bool tools_stream_as_whole(const ParserFactory& make, const std::string& output, std::mt19937& rng) {
    const ToolParseResult whole = counting_parser(make)->parse_all(output);
    auto parser = counting_parser(make);
    ToolParseResult streamed;
    size_t pos = 0;
    while (pos < output.size()) {
        const size_t len = std::uniform_int_distribution<size_t>(1, 6)(rng);
        accumulate(streamed, parser->feed(output.substr(pos, len)));
        pos += len;
    }
    accumulate(streamed, parser->finish());
    Calls calls;
    std::vector<std::string> ids;
    for (const ToolCall& c : whole.calls) calls.emplace_back(c.name, c.arguments), ids.push_back(c.id);
    return same(streamed, whole.content, calls, ids);
}

// Whether `output` fed a byte at a time gives the reasoning split parse_all gives.
inline bool reasoning_streams_as_whole(const std::string& dialect, const std::string& output) {
    const ReasoningDelta whole = make_reasoning_parser(dialect, plain_request(), "")->parse_all(output);
    auto parser = make_reasoning_parser(dialect, plain_request(), "");
    ReasoningDelta streamed;
    auto take = [&](const ReasoningDelta& d) {
        streamed.reasoning += d.reasoning;
        streamed.content += d.content;
    };
    for (char c : output) take(parser->feed(std::string(1, c)));
    take(parser->finish());
    return streamed.reasoning == whole.reasoning && streamed.content == whole.content;
}

}  // namespace vllm_test
