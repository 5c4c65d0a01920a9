// JSON value, parser and serializer tests: round trips, Python-compatible
// number and string output, strict-parser errors with positions, Unicode.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "util/error.h"
#include "util/json.h"
#include "check.h"

using namespace vllm;

namespace {

void check_eq(const std::string& got, const std::string& want, const std::string& what) {
    check(got == want, what + ": got [" + got + "] want [" + want + "]");
}

// The error message of parsing `text`, or "" when it parses.
std::string parse_error(const std::string& text) {
    try {
        json::parse(text);
        return "";
    } catch (const Error& e) {
        if (e.status() != VLLM_ERR_INVALID_ARGUMENT) return "wrong status";
        return e.what();
    }
}

void expect_parse_error(const std::string& text, const std::string& fragment) {
    std::string err = parse_error(text);
    check(!err.empty() && err.find(fragment) != std::string::npos,
          "parse error for [" + text + "] should contain [" + fragment + "], got [" + err + "]");
}

void test_floats_print_like_python_repr() {
    struct Case {
        double value;
        const char* repr;
    } cases[] = {
        {1.0, "1.0"},       {1e16, "1e+16"},         {1.5e-05, "1.5e-05"}, {0.1, "0.1"},
        {1e15, "1000000000000000.0"}, {123456789012345678.0, "1.2345678901234568e+17"},
        {0.0001, "0.0001"}, {-0.0, "-0.0"},          {5e-324, "5e-324"},   {1.7976931348623157e308, "1.7976931348623157e+308"},
        {1e22, "1e+22"},    {12.5, "12.5"},          {100.0, "100.0"},     {2.5e-5, "2.5e-05"},
        {0.00012, "0.00012"}, {-3.25, "-3.25"},      {1.0 / 3, "0.3333333333333333"},
    };
    for (const Case& c : cases) check_eq(json::format_float(c.value), c.repr, "format_float");
    check_eq(json::format_float(std::numeric_limits<double>::infinity()), "inf", "repr inf");
    check_eq(json::dump(json::Value(std::nan(""))), "NaN", "dump NaN");
    check_eq(json::dump(json::Value(-std::numeric_limits<double>::infinity())), "-Infinity", "dump -inf");
}

void test_round_trips() {
    const char* docs[] = {
        "null", "true", "false", "0", "-0", "42", "-9223372036854775808", "9223372036854775807", "1.5", "\"\"",
        "\"a\\\"b\\\\c\\n\\t\\r\\b\\f\\u0001\"", "[]", "{}", "[1,[2,[3,{}]]]", "{\"b\":1,\"a\":[true,null]}",
        "\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\"",
    };
    for (const char* doc : docs) {
        json::Value v = json::parse(doc);
        std::string once = json::dump(v);
        check(json::parse(once) == v, std::string("round trip of ") + doc);
        check_eq(json::dump(json::parse(once)), once, std::string("stable dump of ") + doc);
    }
    check_eq(json::dump(json::parse(" { \"z\" : 1 , \"a\" : 2 } ")), "{\"z\":1,\"a\":2}", "key order kept");
    check_eq(json::dump(json::parse("-0")), "0", "-0 is the int 0");
    check_eq(json::dump(json::parse("-0.0")), "-0.0", "-0.0 stays a float");
    check_eq(json::dump(json::parse("1E2")), "100.0", "exponent makes a float");
    check_eq(json::dump(json::parse("99999999999999999999")), "1e+20", "int64 overflow read as float");
    check_eq(json::dump(json::parse("\"\\/\"")), "\"/\"", "escaped slash");
}

void test_dump_options() {
    json::Value v = json::parse("{\"a\":[1,{}],\"b\":[],\"c\":{\"d\":\"x\"}}");
    json::DumpOptions py;
    py.python_separators = true;
    check_eq(json::dump(v, py), "{\"a\": [1, {}], \"b\": [], \"c\": {\"d\": \"x\"}}", "python separators");
    json::DumpOptions indented;
    indented.indent = 2;
    check_eq(json::dump(v, indented),
             "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": [],\n  \"c\": {\n    \"d\": \"x\"\n  }\n}", "indent 2");
    json::DumpOptions zero;
    zero.indent = 0;
    check_eq(json::dump(json::parse("[1,2]"), zero), "[\n1,\n2\n]", "indent 0");

    json::Value s("\x7f\xc3\xa9\xf0\x9f\x98\x80<&>'\x01");
    check_eq(json::dump(s), "\"\x7f\xc3\xa9\xf0\x9f\x98\x80<&>'\\u0001\"", "non-ASCII kept, no HTML escaping");
    json::DumpOptions ascii;
    ascii.ensure_ascii = true;
    check_eq(json::dump(s, ascii), "\"\\u007f\\u00e9\\ud83d\\ude00<&>'\\u0001\"", "ensure_ascii");
    bool threw = false;
    try {
        json::dump(json::Value("\xff"), ascii);
    } catch (const Error& e) {
        threw = std::string(e.what()).find("not valid UTF-8") != std::string::npos;
    }
    check(threw, "ensure_ascii refuses invalid UTF-8");
}

void test_unicode_escapes() {
    check(json::parse("\"\\u00e9\"").as_string() == "\xc3\xa9", "\\u00e9");
    check(json::parse("\"\\u20AC\"").as_string() == "\xe2\x82\xac", "\\u20AC");
    check(json::parse("\"\\ud83d\\ude00\"").as_string() == "\xf0\x9f\x98\x80", "surrogate pair");
    check(json::parse("\"\\u0000\"").as_string() == std::string(1, '\0'), "\\u0000");
    expect_parse_error("\"\\ud83d\"", "high surrogate not followed by a low surrogate");
    expect_parse_error("\"\\ud83d\\u0041\"", "high surrogate not followed by a low surrogate");
    expect_parse_error("\"\\ude00\"", "lone low surrogate");
    expect_parse_error("\"\\u12g4\"", "invalid hex digit");
    expect_parse_error("\"\\u12\"", "truncated \\u escape");
    expect_parse_error("\"\xff\"", "invalid UTF-8");
    expect_parse_error("\"\xc0\xaf\"", "invalid UTF-8");       // overlong
    expect_parse_error("\"\xed\xa0\x80\"", "invalid UTF-8");    // encoded surrogate
    expect_parse_error("\"\xe2\x82\"", "invalid UTF-8");        // truncated
}

void test_parse_errors() {
    expect_parse_error("", "line 1 column 1: unexpected end of input");
    expect_parse_error("   ", "unexpected end of input");
    expect_parse_error("[1,]", "line 1 column 4: unexpected character ']'");
    expect_parse_error("{\"a\":1,}", "expected a string key");
    expect_parse_error("{\"a\" 1}", "expected ':'");
    expect_parse_error("[1 2]", "expected ',' or ']'");
    expect_parse_error("{\"a\":1 \"b\":2}", "expected ',' or '}'");
    expect_parse_error("01", "leading zero");
    expect_parse_error("1.", "digit after the decimal point");
    expect_parse_error("1e", "digit in the exponent");
    expect_parse_error("-", "expected a digit");
    expect_parse_error("+1", "unexpected character '+'");
    expect_parse_error("NaN", "unexpected character 'N'");
    expect_parse_error("tru", "expected 'true'");
    expect_parse_error("nul", "expected 'null'");
    expect_parse_error("\"abc", "unterminated string");
    expect_parse_error("\"a\nb\"", "control character 0x0A");
    expect_parse_error("\"\\x\"", "invalid escape \\x");
    expect_parse_error("1 2", "unexpected content after the value");
    expect_parse_error("[1,\n  2,\n  ?]", "line 3 column 3");
    expect_parse_error("{'a':1}", "expected a string key");
    expect_parse_error("[", "unexpected end of input");
    expect_parse_error("{", "unexpected end of input in an object");
    expect_parse_error("\xef\xbb\xbf{}", "unexpected character 0xEF");
    std::string deep(300, '[');
    expect_parse_error(deep + std::string(300, ']'), "JSON is nested too deeply (limit 256 levels)");
    std::string ok_depth = std::string(256, '[') + std::string(256, ']');
    check(parse_error(ok_depth).empty(), "256 levels are accepted");
}

void test_value_api() {
    json::Value o = json::Value::object();
    o.set("b", 1);
    o.set("a", "x");
    o.set("b", 2.5);
    check_eq(json::dump(o), "{\"b\":2.5,\"a\":\"x\"}", "set replaces in place");
    check(o.find("a") != nullptr && o.find("a")->as_string() == "x", "find");
    check(o.find("zz") == nullptr, "find absent");
    check(o.erase("b") && !o.erase("b") && o.size() == 1, "erase");
    json::Value a = json::Value::array();
    a.push_back(1);
    a.push_back(nullptr);
    a.push_back(json::Value::object());
    check(a.size() == 3 && a.items()[1].is_null(), "array push_back");
    check(json::Value(1) == json::Value(1.0), "1 == 1.0");
    check(json::Value(true) != json::Value(1), "true != 1 (kinds differ)");
    check(json::parse("{\"a\":1,\"b\":2}") == json::parse("{\"b\":2,\"a\":1}"), "object equality ignores order");
    check(json::parse("[1,2]") != json::parse("[2,1]"), "array equality keeps order");
    check(json::parse("{\"a\":1,\"a\":2}").members().size() == 1 &&
              json::parse("{\"a\":1,\"b\":0,\"a\":2}").members()[0].second.as_int() == 2,
          "duplicate keys: first position, last value");
    std::string big = "{";
    for (int i = 0; i < 2000; ++i) big += "\"k" + std::to_string(i % 1000) + "\":" + std::to_string(i) + ",";
    big.back() = '}';
    json::Value bv = json::parse(big);
    check(bv.size() == 1000 && bv.find("k5")->as_int() == 1005, "duplicates in a large object");

    std::string err;
    try {
        json::Value("s").as_int();
    } catch (const Error& e) {
        err = e.what();
    }
    check_eq(err, "JSON value is string, expected int", "wrong-kind error");
    err.clear();
    try {
        json::Value(3).members();
    } catch (const Error& e) {
        err = e.what();
    }
    check_eq(err, "JSON value is int, expected object", "members of an int");
    check(json::Value(int64_t{7}).as_double() == 7.0, "as_double of an int");
}

}  // namespace

int main() {
    test_floats_print_like_python_repr();
    test_round_trips();
    test_dump_options();
    test_unicode_escapes();
    test_parse_errors();
    test_value_api();
    return report();
}
