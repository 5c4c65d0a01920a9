// Where a bracketed block (a JSON object or array, a Python list) or a
// tagged call ends, for parsers that must wait until a call's markup has
// closed before parsing it.
#pragma once
#include <cstddef>
#include <string_view>

namespace vllm::chat {

inline constexpr std::string_view kJsonQuotes = "\"";
inline constexpr std::string_view kPythonQuotes = "'\"";

// A scan of one block that arrives in pieces, resumed where the previous
// call stopped: a block streamed a token at a time is read once, not once
// per token (a model may stream megabytes into one call, and rescanning
// from the block's start made that quadratic). Each call passes the block
// so far, from its first character, grown only at its end since the last
// call. A scan that finds the block's end starts over for the next block.
class BlockScanner {
public:
    // Strings open and close with any character of `quotes`, with backslash escapes.
    explicit BlockScanner(std::string_view quotes) : quotes_(quotes) {}

    // text[0] is an opening bracket ('{', '[' or '('). The length of the
    // block up to and including the bracket that closes it, counting
    // brackets outside strings; npos while it has not closed. Bracket kinds
    // are not matched against each other: the parser that follows rejects a
    // block whose brackets do not pair up.
    size_t bracketed_length(std::string_view text);

    // The first occurrence of `marker` outside strings (a closing tag quoted
    // inside a call's arguments does not end the call); npos if none yet.
    size_t find_outside_strings(std::string_view text, std::string_view marker);

private:
    // Steps over text[scanned_] inside a string or onto a string's opening
    // quote; false when it is outside strings and not a quote.
    bool step_string(char c);
    // The found end of a block: its position, with the scan started over.
    size_t found(size_t position);

    std::string_view quotes_;
    size_t scanned_ = 0;   // text[0, scanned_) is read
    size_t depth_ = 0;     // open brackets outside strings
    char quote_ = 0;       // the open string's quote character, 0 outside strings
    bool escaped_ = false; // the previous character was a backslash inside a string
};

}  // namespace vllm::chat
