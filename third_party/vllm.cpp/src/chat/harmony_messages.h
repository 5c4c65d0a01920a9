// Reading gpt-oss's harmony format as it streams. The model writes a series
// of messages, each a header and a body:
//   <|channel|>analysis<|message|>Need the weather.<|end|>
//   <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Oslo"}<|call|>
//   <|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>
// (the generation prompt already wrote the first "<|start|>assistant"; the
// recipient "to=..." may stand before or after the channel). The reader
// reports text outside any message, each header once it is whole, and each
// body as it arrives; a marker cut across pieces is held back until it is
// whole, so every way of cutting the text gives the same reports.
//
// A header that never reaches "<|message|>" (cut short, or not harmony at
// all) is reported back as outside text, as it was written.
#pragma once
#include <string>
#include <string_view>

namespace vllm::chat {

struct HarmonyHeader {
    std::string raw;           // as written, from its "<|start|>" or "<|channel|>" to "<|message|>" inclusive
    std::string channel;       // "analysis", "commentary", "final", or "" when none
    std::string recipient;     // "functions.get_weather", or "" when none
    std::string content_type;  // "json" ("<|constrain|>json" or a bare "json"), or ""
};

class HarmonyReader {
public:
    class Listener {
    public:
        virtual ~Listener() = default;
        virtual void outside_text(std::string_view text) = 0;
        virtual void message_start(const HarmonyHeader& header) = 0;
        virtual void body_text(std::string_view text) = 0;
        // terminator: "<|end|>", "<|call|>", "<|return|>", or "" when the
        // output ended (at_output_end) or a new message began inside the body.
        virtual void message_end(std::string_view terminator, bool at_output_end) = 0;
    };

    explicit HarmonyReader(Listener& listener) : listener_(listener) {}
    void feed(std::string_view text);
    void finish();

private:
    enum class State { Outside, Header, Body };

    Listener& listener_;
    State state_ = State::Outside;
    std::string pending_;  // Outside/Body: a tail that may start a marker; Header: the header so far
};

// The header's fields, read from its raw text.
HarmonyHeader parse_harmony_header(std::string raw);

}  // namespace vllm::chat
