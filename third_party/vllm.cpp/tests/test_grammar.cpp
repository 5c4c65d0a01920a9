// Grammar engine tests without a vocabulary: GBNF parsing and its errors,
// byte-level matching (ambiguity, repetition, classes, UTF-8), and the
// regex / JSON Schema / choice compilers.
//
//   test_grammar
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "structured/builtin_grammars.h"
#include "structured/gbnf_parser.h"
#include "structured/json_schema.h"
#include "structured/parser_states.h"
#include "structured/regex.h"
#include "structured/structured_output.h"
#include "structured/utf8_ranges.h"
#include "util/error.h"
#include "util/utf8.h"
#include "check.h"

using namespace vllm;
using namespace vllm::structured;

namespace {

void check_throws(const std::function<void()>& fn, const std::string& needle, const std::string& what) {
    try {
        fn();
        check(false, what + ": no error (expected '" + needle + "')");
    } catch (const Error& e) {
        const bool ok = e.status() == VLLM_ERR_INVALID_ARGUMENT && std::string(e.what()).find(needle) != std::string::npos;
        check(ok, what + ": got '" + e.what() + "', expected '" + needle + "'");
    }
}

// The whole text is in the grammar's language.
bool matches(const std::shared_ptr<const Grammar>& g, const std::string& text) {
    ParserStates states(g);
    const int32_t s = states.advance(states.initial(), text);
    return s != ParserStates::kDead && states.can_end(s);
}

// Some continuation of the text is in the language.
bool is_prefix(const std::shared_ptr<const Grammar>& g, const std::string& text) {
    ParserStates states(g);
    return states.advance(states.initial(), text) != ParserStates::kDead;
}

void expect(const std::shared_ptr<const Grammar>& g, const std::vector<std::string>& yes,
            const std::vector<std::string>& no, const std::string& name) {
    for (const std::string& t : yes) check(matches(g, t), name + " accepts '" + t + "'");
    for (const std::string& t : no) check(!matches(g, t), name + " rejects '" + t + "'");
}

void test_gbnf_basics() {
    auto g = compile_gbnf("root ::= \"ab\" | \"c\" x\nx ::= [0-9]+ # digits\n");
    expect(g, {"ab", "c1", "c123"}, {"", "a", "c", "abc", "c1a"}, "alternation");

    g = compile_gbnf("root ::= (\"a\" | \"b\")* \"c\"?\n");
    expect(g, {"", "a", "abba", "abc", "c"}, {"cc", "ca", "d"}, "star/optional group");

    g = compile_gbnf("root ::= \"x\"{3}\n");
    expect(g, {"xxx"}, {"xx", "xxxx"}, "{m}");
    g = compile_gbnf("root ::= \"xy\"{2,}\n");
    expect(g, {"xyxy", "xyxyxy"}, {"xy", "xyx"}, "{m,}");
    g = compile_gbnf("root ::= [a-c]{1,3}\n");
    expect(g, {"a", "abc", "cc"}, {"", "abca", "d"}, "{m,n}");
    g = compile_gbnf("root ::= [a]{0,0} \"b\"\n");
    expect(g, {"b"}, {"ab"}, "{0,0}");

    g = compile_gbnf("root ::= [^a-z\\n] \".\"\n");
    expect(g, {"A.", "\xc3\xa9.", "\xe2\x82\xac.", "\xf0\x9f\x98\x80."}, {"a.", "\n.", "A"}, "negated class");

    g = compile_gbnf("root ::= .+\n");
    expect(g, {"h\xc3\xa9llo", "\xf0\x9f\x98\x80"}, {"", "\xff", "\xc3", "\xed\xa0\x80"}, "any char, UTF-8 only");
    check(is_prefix(g, "\xf0\x9f"), "partial 4-byte character is a valid prefix");

    g = compile_gbnf("root ::= [α-ω]+ \"\\u00e9\\x41\\U0001F600\"\n");
    expect(g, {"αβ\xc3\xa9" "A\xf0\x9f\x98\x80"}, {"a\xc3\xa9" "A\xf0\x9f\x98\x80", "Α\xc3\xa9" "A\xf0\x9f\x98\x80"},
           "UTF-8 ranges and escapes");

    g = compile_gbnf("root ::= \"\\\"\\\\\\n\\t\\r\" [\\]\\[\\-]\n");
    expect(g, {"\"\\\n\t\r]", "\"\\\n\t\r-"}, {"\"\\\n\t\ra"}, "literal and class escapes");

    // Multi-line: newlines after ::= and |, and inside parentheses.
    g = compile_gbnf("root ::=\n  \"a\" |\n  (\n \"b\"\n  \"c\" )\n\n# end\n");
    expect(g, {"a", "bc"}, {"b"}, "newlines in allowed places");

    // Ambiguous grammar: both branches alive until they diverge.
    g = compile_gbnf("root ::= a | b\na ::= \"x\"+ \"y\"\nb ::= \"x\"+ \"z\" | \"xx\" \"y\"\n");
    expect(g, {"xy", "xxy", "xxxz", "xz"}, {"x", "xyz"}, "ambiguous");

    // Recursion (nesting) and a nullable item under a star.
    g = compile_gbnf("root ::= \"(\" root \")\" | \"\"\n");
    expect(g, {"", "()", "((()))"}, {"(()", ")("}, "balanced parentheses");
    g = compile_gbnf("root ::= (\"a\"?)* \"b\"\n");
    expect(g, {"b", "aab"}, {"a"}, "nullable under star");
}

void test_gbnf_errors() {
    check_throws([] { compile_gbnf("root ::= foo\n"); }, "undefined rule 'foo' (referenced by rule 'root')", "undefined");
    check_throws([] { compile_gbnf("root ::= root \"a\" | \"b\"\n"); }, "left recursion: rule 'root'", "direct left recursion");
    check_throws([] { compile_gbnf("root ::= \"ab\" root\n"); }, "admits no text at all", "no finite string");
    check_throws([] { compile_gbnf("root ::= [^\\x00-\\U0010FFFF]\n"); }, "admits no text at all", "empty class");
    check_throws([] { compile_gbnf("root ::= " + std::string(300, '(') + "\"a\"" + std::string(300, ')') + "\n"); },
                 "a group is nested too deeply (limit 256 levels)", "group nesting bound");
    check_throws([] { compile_regex(std::string(300, '(') + "a" + std::string(300, ')')); },
                 "regex: a group is nested too deeply (limit 256 levels)",
                 "regex group nesting bound");
    {
        // An alternative that can never complete is dropped: only "b" is left.
        auto g = compile_gbnf("root ::= \"a\" [^\\x00-\\U0010FFFF] | \"b\"\n");
        ParserStates states(g);
        check(states.advance(states.initial(), "a") == ParserStates::kDead, "dead alternative dropped");
        check(states.can_end(states.advance(states.initial(), "b")), "live alternative kept");
    }
    {
        // d_i ::= d_(i+1) d_(i+1) | "a": runs of a's parse in exponentially many ways.
        std::string doubling = "root ::= d0\n";
        for (int i = 0; i < 18; ++i)
            doubling += "d" + std::to_string(i) + " ::= d" + std::to_string(i + 1) + " d" + std::to_string(i + 1) + " | \"a\"\n";
        doubling += "d18 ::= \"a\"\n";
        auto g = compile_gbnf(doubling);
        check_throws([&] {
            ParserStates states(g);
            states.advance(states.initial(), std::string(16, 'a'));
        }, "too ambiguous", "stack bound of an ambiguous grammar");
        // A long chain of leading references: linear checks, no recursion.
        std::string chain = "root ::= r0\n";
        for (int i = 0; i < 100000; ++i) chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
        ParserStates states(compile_gbnf(chain + "r100000 ::= \"a\"\n"));
        check(states.can_end(states.advance(states.initial(), "a")), "100,000-rule chain");
        check_throws([&] { compile_gbnf(chain + "r100000 ::= r5 \"a\" | \"b\"\n"); }, "left recursion: rule 'r5'",
                     "left recursion through a long chain");
    }
    check_throws([] { compile_gbnf("root ::= a\na ::= b? \"x\"\nb ::= \"\" | root\n"); }, "left recursion",
                 "left recursion through nullable");
    check_throws([] { compile_gbnf("root ::= (root \"a\")* \"b\"\n"); }, "left recursion: rule 'root'",
                 "left recursion through a group");
    check_throws([] { compile_gbnf("a ::= \"x\"\n"); }, "no rule named 'root'", "no root");
    check_throws([] { compile_gbnf("  # only a comment\n"); }, "empty", "empty grammar");
    check_throws([] { compile_gbnf("root ::= \"a\"\nroot ::= \"b\"\n"); }, "line 2 column 10: rule 'root' is defined twice",
                 "duplicate");
    check_throws([] { compile_gbnf("root = \"a\"\n"); }, "line 1 column 6: expected '::='", "missing ::=");
    check_throws([] { compile_gbnf("root ::= \"abc\n"); }, "unterminated string literal", "unterminated literal");
    check_throws([] { compile_gbnf("root ::= [abc\n"); }, "unterminated character class", "unterminated class");
    check_throws([] { compile_gbnf("root ::= (\"a\"\n"); }, "expected ')'", "unclosed group");
    check_throws([] { compile_gbnf("root ::= \"a\")\n"); }, "line 1 column 13: unexpected ')'", "stray paren");
    check_throws([] { compile_gbnf("root ::= [z-a]\n"); }, "out of order", "reversed range");
    check_throws([] { compile_gbnf("root ::= \"a\"{3,1}\n"); }, "min > max", "bad repetition");
    check_throws([] { compile_gbnf("root ::= \"a\"{2\n"); }, "expected '}'", "unclosed repetition");
    check_throws([] { compile_gbnf("root ::= \"a\"{99999999}\n"); }, "too large", "huge repetition");
    check_throws([] { compile_gbnf("root ::= \"\\q\"\n"); }, "unknown escape '\\q'", "bad escape");
    check_throws([] { compile_gbnf("root ::= \"\\x4\"\n"); }, "hex digits", "short hex escape");
    check_throws([] { compile_gbnf("root ::= \"\\uD800\"\n"); }, "not a Unicode scalar", "surrogate escape");
    check_throws([] { compile_gbnf("root ::= \"\xff\"\n"); }, "invalid UTF-8", "invalid UTF-8 source");
    check_throws([] { compile_gbnf("root ::= * \"a\"\n"); }, "unexpected '*'", "quantifier without item");
    check_throws([] { compile_gbnf("root ::= \"a\"\n  | \"b\"\n"); }, "line 2 column 3: expected a rule name",
                 "alternative on a new line at top level");
}

void test_utf8_ranges() {
    // Every code point of a few ranges: exactly the encodings matched.
    const std::vector<CodepointRange> ranges = {{0x41, 0x5A}, {0x7F0, 0x900}, {0xD000, 0xE100}, {0xFFF0, 0x10010}};
    const auto seqs = utf8_sequences(ranges);
    auto matched = [&](uint32_t cp) {
        std::string s;
        utf8::append(s, cp);
        for (const auto& seq : seqs) {
            if (seq.size() != s.size()) continue;
            bool all = true;
            for (size_t i = 0; i < s.size(); ++i)
                all = all && static_cast<uint8_t>(s[i]) >= seq[i].first && static_cast<uint8_t>(s[i]) <= seq[i].second;
            if (all) return true;
        }
        return false;
    };
    int wrong = 0;
    for (uint32_t cp = 0; cp < 0x10100; ++cp) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        bool in = false;
        for (const auto& r : ranges) in = in || (cp >= r.lo && cp <= r.hi);
        if (matched(cp) != in) ++wrong;
    }
    check(wrong == 0, "utf8_sequences covers exactly the ranges (" + std::to_string(wrong) + " wrong)");
    check(complement_ranges({{0, 9}, {20, kMaxCodepoint}}).size() == 1, "complement");
}

void test_regex() {
    auto re = [](const std::string& p) { return compile_regex(p); };
    expect(re("abc"), {"abc"}, {"ab", "abcd"}, "regex literal");
    expect(re("^a(b|cd)*e?$"), {"a", "abcdb", "abe"}, {"ae e", "ac"}, "regex groups");
    expect(re("\\d{3}-\\d{2,4}"), {"123-45", "000-1234"}, {"12-45", "123-12345", "abc-12"}, "regex \\d and braces");
    expect(re("[A-Z][a-z]*\\s\\w+"), {"Hello world_1", "A\tb"}, {"hello world", "A  "}, "regex classes");
    expect(re("[^0-9]+"), {"abc", "\xc3\xa9"}, {"a1"}, "regex negated class");
    expect(re("a.c"), {"abc", "a\xe2\x82\xac" "c"}, {"a\nc"}, "regex dot");
    expect(re("(?:ab)+(?P<x>c)"), {"abc", "ababc"}, {"c"}, "regex non-capturing and named groups");
    expect(re("a{,2}b{2}c{1,}?"), {"bbc", "aabbcc"}, {"aaabbc"}, "regex {,n} and lazy suffix");
    expect(re("x{y}"), {"x{y}"}, {"x"}, "regex literal brace");
    expect(re("\\.\\*\\x41\\u00e9"), {".*A\xc3\xa9"}, {"a*A\xc3\xa9"}, "regex escapes");
    expect(re("(a*)*b|"), {"", "b", "aab"}, {"a"}, "regex nullable star and empty branch");
    expect(re("[\\d.]+|[-+]?"), {"1.5", "", "-"}, {"1-"}, "regex class with escape");

    check_throws([] { compile_regex("(a"); }, "regex: missing ')' at position 2", "regex unclosed group");
    check_throws([] { compile_regex("a)"); }, "unbalanced ')' at position 1", "regex stray paren");
    check_throws([] { compile_regex("[abc"); }, "unterminated character class at position 0", "regex unclosed class");
    check_throws([] { compile_regex("*a"); }, "nothing to repeat at position 0", "regex nothing to repeat");
    check_throws([] { compile_regex("a**"); }, "multiple repeat", "regex multiple repeat");
    check_throws([] { compile_regex("(a)\\1"); }, "backreferences are not supported", "regex backreference");
    check_throws([] { compile_regex("(?=a)"); }, "unsupported construct '(?='", "regex lookahead");
    check_throws([] { compile_regex("(?i)a"); }, "unsupported construct", "regex flags");
    check_throws([] { compile_regex("a\\b"); }, "unsupported escape '\\b'", "regex word boundary");
    check_throws([] { compile_regex("a^b"); }, "anchor '^'", "regex inner anchor");
    // Patterns no string matches are refused when compiled, naming them.
    for (const char* empty : {"[^\\d\\D]", "[^\\s\\S]", "[^\\w\\W]", "a[^\\d\\D]b", "([^\\d\\D]|[^\\s\\S])+"})
        check_throws([&] { compile_regex(empty); }, std::string("the regex '") + empty + "' matches no string",
                     std::string("empty regex ") + empty);
    // ... but not those where the empty part is optional or one branch of several.
    check(matches(compile_regex("a[^\\d\\D]*b"), "ab"), "an empty class under * matches nothing there");
    check(matches(compile_regex("[^\\d\\D]|c"), "c"), "an empty branch beside a live one");
    check(matches(compile_regex("[^\\d\\D]{0}x"), "x"), "an empty class repeated 0 times");
    // Negated classes complement \d \w \D \W as Python does (no non-ASCII
    // character slips in): [^\d] stays within what Python's [^\d] matches.
    check(!matches(compile_regex("[^\\d]"), "\xc3\xa9") && matches(compile_regex("[^\\d]"), "a"), "[^\\d] is ASCII");
    check(!matches(compile_regex("[^\\W]"), "\xc3\xa9") && matches(compile_regex("[^\\W]"), "a"), "[^\\W] is ASCII");
    check_throws([] { compile_json_schema(R"({"type": "string", "pattern": "[^\\d\\D]"})"); },
                 "matches no string (at #/pattern)", "schema pattern that matches nothing");
    check_throws([] { compile_json_schema(R"({"type": "string", "pattern": "[\\x00-\\x1f]"})"); },
                 "matches no string inside a JSON string", "schema pattern of control characters only");
    check_throws([] { compile_json_schema(R"({"properties": {"a": {"$ref": "#"}}, "required": ["a"]})"); }, "admits no",
                 "schema whose every value is infinite");
    check_throws([] { compile_json_schema(R"({"enum": []})"); }, "'enum' must be a non-empty array", "empty enum");
    check_throws([] { compile_json_schema(R"({"not": {}})"); }, "unsupported keyword 'not'", "not");
    check_throws([] { compile_regex("[z-a]"); }, "bad character range", "regex reversed range");
    check_throws([] { compile_regex("a{3,1}"); }, "min > max", "regex bad braces");
    check_throws([] { compile_regex("a\\"); }, "trailing backslash", "regex trailing backslash");
}

void test_choice_and_json_object() {
    auto g = compile_choice({"yes", "no", "maybe \"so\"", ""});
    expect(g, {"yes", "no", "maybe \"so\"", ""}, {"ye", "yesno", "maybe"}, "choice");
    check_throws([] { compile_choice({}); }, "choice: the list of choices is empty", "empty choice list");
    check_throws([] { compile_choice({"ok", "\xff"}); }, "choice 1 is not valid UTF-8", "invalid choice");

    g = json_object_grammar();
    expect(g,
           {"{}", "{\"a\":1}", "{ \"a\" : [1, 2.5e-3, true, null, \"x\\n\\u00e9\"], \"b\": {\"c\": {}} }",
            "{\n  \"k\": -0.5\n}"},
           {"[]", "{", "{\"a\":01}", "{\"a\":1,}", "{'a':1}", "{\"a\":\"\x01\"}", "1", "{\"a\" 1}"}, "json object");
    // The whitespace bound: kMaxJsonWhitespace in a row, not one more.
    const std::string spaces(kMaxJsonWhitespace, ' ');
    check(matches(g, "{" + spaces + "}"), "whitespace up to the bound");
    check(!is_prefix(g, "{" + spaces + " "), "whitespace past the bound is rejected");
    check(!is_prefix(g, "{\"a\":1" + spaces + " "), "whitespace bound after a value");
}

void test_json_schema() {
    auto schema = [](const std::string& s) { return compile_json_schema(s); };
    expect(schema(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]})"),
           {R"({"name":"Bob"})", R"({"name": "Bob", "age": 42})", R"({ "name" : "" , "age" : -7 })"},
           {R"({})", R"({"age":1})", R"({"age":1,"name":"x"})", R"({"name":"x","extra":1})", R"({"name":1})",
            R"({"name":"x","age":1.5})"},
           "object required/optional");
    expect(schema(R"({"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"},"c":{"type":"number"}}})"),
           {"{}", R"({"b":null})", R"({"a":true,"c":1e5})", R"({"c":-0.5})"}, {R"({"b":null,"a":true})", R"({"a":1})"},
           "all optional");
    expect(schema(R"({"type":"object","additionalProperties":{"type":"integer"}})"), {"{}", R"({"x":1,"y":2})"},
           {R"({"x":"a"})"}, "additionalProperties schema");
    expect(schema(R"({"type":"object","properties":{"a":{"const":1}},"required":["a"],"additionalProperties":true})"),
           {R"({"a":1})", R"({"a":1,"z":[1]})"}, {R"({"z":1})"}, "additionalProperties true");
    expect(schema(R"({"enum":["red","green",3,null,{"x":[1]}]})"), {"\"red\"", "3", "null", "{\"x\":[1]}"},
           {"\"blue\"", "4", "{\"x\": [1]}"}, "enum");
    expect(schema(R"({"const":"a\"b"})"), {"\"a\\\"b\""}, {"\"ab\""}, "const");
    expect(schema(R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":2}]})"), {"12", "\"ab\""}, {"\"abc\"", "1.5"},
           "anyOf");
    expect(schema(R"({"oneOf":[{"type":"boolean"},{"type":"null"}]})"), {"true", "null"}, {"1"}, "oneOf");
    expect(schema(R"({"type":["string","null"]})"), {"\"x\"", "null"}, {"1"}, "type list");
    expect(schema(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                                {"properties":{"b":{"type":"string"}},"required":["b"]}]})"),
           {R"({"a":1,"b":"x"})"}, {R"({"a":1})", R"({"b":"x"})"}, "allOf merge");
    expect(schema(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"]}},"$ref":"#/$defs/node"})"),
           {R"({"v":1,"next":null})", R"({"v":1,"next":{"v":2,"next":null}})"}, {R"({"v":1})"}, "recursive $ref");
    expect(schema(R"({"definitions":{"s":{"type":"string"}},"type":"array","items":{"$ref":"#/definitions/s"}})"),
           {"[]", "[\"a\", \"b\"]"}, {"[1]"}, "definitions $ref and items");
    expect(schema(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})"), {"[1,2]", "[1, 2, 3]"},
           {"[]", "[1]", "[1,2,3,4]"}, "min/maxItems");
    expect(schema(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})"),
           {"[\"a\",1]"}, {"[\"a\"]", "[\"a\",1,2]", "[1,\"a\"]"}, "prefixItems");
    expect(schema(R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"boolean"},"maxItems":3})"),
           {"[\"a\"]", "[\"a\",true,false]"}, {"[\"a\",true,false,true]"}, "prefixItems and items");
    expect(schema(R"({"type":"string","minLength":2,"maxLength":3})"), {"\"ab\"", "\"a\\nb\"", "\"\xc3\xa9\xc3\xa9\""},
           {"\"a\"", "\"abcd\""}, "min/maxLength");
    expect(schema(R"({"type":"string","pattern":"^[a-z]+\"?\\d$"})"), {"\"ab1\"", "\"ab\\\"1\""}, {"\"ab\"1\"", "\"A1\""},
           "pattern (JSON-escaped quote)");
    expect(schema(R"({"type":"string","format":"date"})"), {"\"2024-02-28\"", "\"1999-12-31\""},
           {"\"2024-02-30\"", "\"2024-13-01\"", "\"2024-04-31\""}, "date");
    expect(schema(R"({"type":"string","format":"time"})"), {"\"23:59:59Z\"", "\"01:02:03.5+05:30\""}, {"\"24:00:00Z\"", "\"12:00:00\""},
           "time");
    expect(schema(R"({"type":"string","format":"date-time"})"), {"\"2024-01-01T00:00:00Z\""}, {"\"2024-01-01 00:00:00Z\""},
           "date-time");
    expect(schema(R"({"type":"string","format":"uuid"})"), {"\"123e4567-e89b-12d3-a456-426614174000\""},
           {"\"123e4567e89b12d3a456426614174000\""}, "uuid");
    expect(schema(R"({"type":"string","format":"email"})"), {"\"a.b+c@example.co.uk\""}, {"\"a@b\"", "\"@x.y\""}, "email");
    expect(schema(R"({"type":"integer","minimum":-12,"maximum":305})"), {"-12", "-1", "0", "9", "10", "99", "305", "299"},
           {"-13", "306", "400", "1000", "-0", "007"}, "integer range");
    expect(schema(R"({"type":"integer","exclusiveMinimum":5,"exclusiveMaximum":20})"), {"6", "19"}, {"5", "20"},
           "exclusive integer range");
    expect(schema(R"({"type":"integer","minimum":100})"), {"100", "999", "1000", "123456"}, {"99", "-100", "5"},
           "integer lower bound");
    expect(schema(R"({"type":"integer","maximum":-10})"), {"-10", "-11", "-999999"}, {"-9", "0", "10"}, "integer upper bound");
    expect(schema(R"({"type":"number","minimum":0,"maximum":10})"), {"0", "10", "9.99", "0.5", "3"},
           {"-1", "10.5", "11", "-0.5", "1e3"}, "number range");
    expect(schema(R"({"type":"number","minimum":-2})"), {"-2", "-1.5", "7.25", "100"}, {"-2.5", "-3"}, "number lower bound");
    expect(schema("true"), {"1", "{\"a\":[]}"}, {"", "{"}, "schema true");

    // Exhaustive: integer ranges against arithmetic.
    for (auto [lo, hi] : std::vector<std::pair<int, int>>{{-105, 37}, {7, 1234}, {0, 0}, {-9, -1}, {99, 101}}) {
        auto g = schema("{\"type\":\"integer\",\"minimum\":" + std::to_string(lo) + ",\"maximum\":" + std::to_string(hi) + "}");
        int wrong = 0;
        for (int v = -1500; v <= 1500; ++v) wrong += matches(g, std::to_string(v)) != (v >= lo && v <= hi);
        check(wrong == 0, "integer range [" + std::to_string(lo) + "," + std::to_string(hi) + "] exact (" +
                              std::to_string(wrong) + " wrong)");
    }

    check_throws([] { compile_json_schema(R"({"type":"string","foo":1})"); }, "unsupported keyword 'foo' (at #)", "unknown keyword");
    check_throws([] { compile_json_schema(R"({"properties":{"a":{"type":"number","multipleOf":2}}})"); },
                 "unsupported keyword 'multipleOf' (at #/properties/a)", "multipleOf");
    check_throws([] { compile_json_schema(R"({"type":"object","patternProperties":{}})"); }, "unsupported keyword 'patternProperties'",
                 "patternProperties");
    check_throws([] { compile_json_schema(R"({"type":"string","format":"hostname"})"); }, "unsupported format 'hostname'", "format");
    check_throws([] { compile_json_schema(R"({"type":"strin"})"); }, "unknown type 'strin'", "bad type");
    check_throws([] { compile_json_schema(R"({"type":"object",)"); }, "JSON schema: invalid JSON", "malformed JSON");
    check_throws([] { compile_json_schema(R"([1])"); }, "a schema must be an object or a boolean", "not a schema");
    check_throws([] { compile_json_schema(R"({"$ref":"#/$defs/missing"})"); }, "unresolvable $ref '#/$defs/missing'", "bad ref");
    check_throws([] { compile_json_schema(R"({"$ref":"http://x/y"})"); }, "only local $ref", "remote ref");
    check_throws([] { compile_json_schema(R"({"$ref":"#"})"); }, "left recursion", "self ref");
    check_throws([] { compile_json_schema(R"({"enum":[]})"); }, "'enum' must be a non-empty array", "empty enum");
    check_throws([] { compile_json_schema(R"({"type":"string","minLength":-1})"); }, "'minLength' must be a non-negative integer",
                 "negative minLength");
    check_throws([] { compile_json_schema(R"({"type":"string","minLength":3,"maxLength":2})"); }, "minLength exceeds maxLength",
                 "length order");
    check_throws([] { compile_json_schema(R"({"type":"integer","minimum":5,"maximum":2})"); }, "integer range is empty", "int range");
    check_throws([] { compile_json_schema(R"({"type":"number","minimum":0.5})"); }, "must be a whole number", "number bound");
    check_throws([] { compile_json_schema(R"({"type":"number","exclusiveMinimum":0})"); }, "'exclusiveMinimum' on a number",
                 "number exclusive");
    check_throws([] { compile_json_schema(R"({"type":"string","pattern":"(a"})"); }, "regex: missing ')' at position 2 (at #/pattern)",
                 "bad pattern");
    check_throws([] { compile_json_schema(R"({"anyOf":[{"type":"string"}],"type":"string"})"); },
                 "'anyOf' together with 'type' is not supported", "anyOf with siblings");
    check_throws([] { compile_json_schema(R"({"allOf":[{"type":"string"}]})"); }, "allOf is supported for object schemas only",
                 "allOf of strings");
    check_throws([] { compile_json_schema("false"); }, "schema false admits no value", "false schema");
}

}  // namespace

int main() {
    test_gbnf_basics();
    test_gbnf_errors();
    test_utf8_ranges();
    test_regex();
    test_choice_and_json_object();
    test_json_schema();
    return report();
}
