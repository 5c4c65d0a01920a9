// Regular expressions (Python `re` syntax, fullmatch semantics) as GBNF.
//
// Supported: literals, `.` (any character but \n), classes [...] with
// ranges and ^, escapes \d \w \s \D \W \S \n \t \r \f \v \0 \xHH \uHHHH
// \UHHHHHHHH and escaped punctuation, groups (...) (?:...) (?P<name>...),
// alternation, quantifiers * + ? {m} {m,} {,n} {m,n} (lazy/possessive
// suffixes accepted: they do not change the language), ^ at the very start
// and $ at the very end. \d and \w are ASCII ([0-9], [A-Za-z0-9_]) and \D
// \W their ASCII complements - subsets of Python's Unicode classes, so all
// text the grammar allows fullmatches in Python (inside a negated class,
// which complements them, they widen to supersets for the same reason);
// \s \S are exact. Refused with INVALID_ARGUMENT naming the construct and
// its position: backreferences, lookaround, flags, \b \B \A \Z, anchors
// elsewhere, syntax errors; and a pattern that matches no string at all
// ("the regex '...' matches no string").
#pragma once
#include <string>
#include <string_view>

namespace vllm::structured {

struct RegexOptions {
    // Match inside a JSON string literal: characters a JSON string must
    // escape are written escaped (\" \\ \n \u001f); classes drop `"`, `\`
    // and control characters (a subset of the pattern's language).
    bool json_string_content = false;
};

// One parenthesized GBNF expression (no rule references) for the pattern.
std::string regex_to_gbnf(std::string_view pattern, const RegexOptions& options = {});

}  // namespace vllm::structured
