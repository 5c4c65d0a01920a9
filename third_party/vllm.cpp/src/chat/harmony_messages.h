// Reading gpt-oss's harmony format as it streams. The model writes a series
// of messages, each a header and a body:
//   <|channel|>analysis<|message|>Need the weather.<|end|>
//   <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Oslo"}<|call|>
//   <|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>
// (the generation prompt already wrote the first "<|start|>assistant"; the
// recipient "to=..." may stand before or after the channel, and so may open
// the output: " to=functions.get_weather<|channel|>commentary json<|message|>",
// as gpt-oss's own template renders a call after that prompt). The reader
// reports, as events, text outside any message, each header once it is
// whole, and each body as it arrives; a marker cut across pieces is held
// back until it is whole, so every way of cutting the text gives the same
// reports.
//
// A header that never reaches "<|message|>" (cut short, or not harmony at
// all) is reported back as outside text, as it was written.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace vllm::chat {

struct HarmonyHeader {
    std::string raw;           // as written, from its "<|start|>" or "<|channel|>" to "<|message|>" inclusive
    std::string channel;       // "analysis", "commentary", "final", or "" when none
    std::string recipient;     // "functions.get_weather", or "" when none
    std::string content_type;  // "json" ("<|constrain|>json" or a bare "json"), or ""
};

// What the reader found, in order.
struct HarmonyEvent {
    enum class Kind {
        OutsideText,   // text: outside any message
        MessageStart,  // header: a message's whole header
        BodyText,      // text: the next piece of the open message's body
        MessageEnd,    // text: "<|end|>", "<|call|>", "<|return|>", or "" when the output
                       // ended (at_output_end) or a new message began inside the body
    };
    Kind kind;
    std::string text;
    HarmonyHeader header;
    bool at_output_end = false;
};

class HarmonyReader {
public:
    std::vector<HarmonyEvent> feed(std::string_view text);
    std::vector<HarmonyEvent> finish();

private:
    enum class State { Outside, Header, Body };

    void emit(HarmonyEvent::Kind kind, std::string_view text);

    State state_ = State::Outside;
    bool at_output_start_ = true;  // nothing read yet: a header may open with its recipient
    std::string pending_;  // Outside/Body: a tail that may start a marker; Header: the header so far
    std::vector<HarmonyEvent> events_;  // what feed()/finish() return
};

// The header's fields, read from its raw text.
HarmonyHeader parse_harmony_header(std::string raw);

}  // namespace vllm::chat
