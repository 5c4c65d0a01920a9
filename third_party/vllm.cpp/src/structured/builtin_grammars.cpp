#include "structured/builtin_grammars.h"

#include <cstdio>

#include "util/error.h"
#include "util/utf8.h"

namespace vllm::structured {

std::string gbnf_literal(const std::string& utf8, const std::string& what) {
    if (!utf8::is_valid(utf8)) throw_invalid_argument(what + " is not valid UTF-8");
    std::string out = "\"";
    for (unsigned char c : utf8) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7F) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\x%02X", c);
            out += escape;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

std::string json_value_rules() {
    return R"(json-value ::= json-object | json-array | json-string | json-number | "true" | "false" | "null"
json-object ::= "{" json-ws ( json-member ( "," json-ws json-member )* )? "}"
json-member ::= json-string json-ws ":" json-ws json-value json-ws
json-array ::= "[" json-ws ( json-value json-ws ( "," json-ws json-value json-ws )* )? "]"
json-string ::= "\"" json-char* "\""
json-char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" json-bmp-escape )
json-bmp-escape ::= [0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}
json-number ::= "-"? ( "0" | [1-9] [0-9]{0,)" +
           std::to_string(kMaxIntegerDigits - 1) + R"(} ) ( "." [0-9]{1,)" + std::to_string(kMaxFractionDigits) +
           R"(} )? ( [eE] [-+]? [0-9]{1,)" + std::to_string(kMaxExponentDigits) + R"(} )?
json-ws ::= [ \t\n\r]{0,)" + std::to_string(kMaxJsonWhitespace) + "}\n";
}

std::string json_object_gbnf() { return "root ::= json-object\n" + json_value_rules(); }

std::string choice_gbnf(const std::vector<std::string>& choices) {
    if (choices.empty()) throw_invalid_argument("choice: the list of choices is empty");
    std::string out = "root ::= ";
    for (size_t i = 0; i < choices.size(); ++i) {
        if (i) out += " | ";
        out += gbnf_literal(choices[i], "choice " + std::to_string(i));
    }
    return out + "\n";
}

}  // namespace vllm::structured
