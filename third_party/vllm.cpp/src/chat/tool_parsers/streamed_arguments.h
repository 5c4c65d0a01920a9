// A tool call's JSON arguments read while they are generated, so that a
// parser can stream them piece by piece (vLLM's way: the name first, then
// argument fragments): the complete tokens so far re-serialized as the
// whole value is (json.dumps' separators, ensure_ascii off), so the
// fragments of a call always add up to its arguments exactly, and a longer
// text only ever extends what a shorter one gave. The reader resumes where
// it stopped (a long value streamed a token at a time is read once).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vllm::json {
class Value;
}

namespace vllm::chat {

// A tool call's arguments (or one value of them) as vLLM sends them: Python's
// json.dumps(ensure_ascii=False) ({"city": "Paris"}).
std::string arguments_json(const json::Value& value);

class ArgumentsReader {
public:
    // `text`: the arguments so far (leading whitespace allowed), each call
    // the same text grown at its end; the value must be an object. at_end:
    // no more text will come (a trailing number or literal is complete).
    void read(std::string_view text, bool at_end);

    const std::string& canonical() const { return canonical_; }  // the complete tokens read, re-serialized
    bool complete() const { return complete_; }        // the value ended
    bool broken() const { return broken_; }            // the text stopped being a JSON object there
    bool has_member_key() const { return has_member_key_; }  // a first key and its colon were read, or the object ended
    bool has_member_value() const { return has_member_value_; }  // the first member's value was read whole, or the object ended

private:
    // What comes next: a value, a key (or '}' right after '{'), ':' after a
    // key, ',' or the container's close after a value.
    enum class Want { Value, KeyOrClose, Key, Colon, CommaOrClose, ValueOrClose };
    void after_value();
    // The scalar or string token text[at_, end) re-serialized onto canonical_,
    // at_ past it; false (broken) when it is not JSON.
    bool take_token(std::string_view text, size_t end);

    std::string canonical_;
    bool complete_ = false;
    bool broken_ = false;
    bool has_member_key_ = false;
    bool has_member_value_ = false;
    std::vector<char> open_;  // '{' or '['
    Want want_ = Want::Value;
    size_t at_ = 0;            // the next byte to read
    size_t string_scan_ = 0;   // inside a string token not yet closed: where its scan stopped
    bool escaped_ = false;     // ... and whether that byte is escaped
};

// A call object's opening as hermes writes it, `{"name": "<name>", "arguments": `
// (or "parameters", as Llama 3.x and the forced calls write it, when
// accept_parameters): the name and the offset of the arguments value. NotYet
// while the text may still open so; Never when it opens otherwise (another
// key order, ...).
struct CallHead {
    enum class State { NotYet, Found, Never } state = State::NotYet;
    std::string name;
    size_t arguments_at = 0;
};
CallHead read_call_head(std::string_view text, bool accept_parameters = false);

}  // namespace vllm::chat
