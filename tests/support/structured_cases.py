"""Corpora for structured output: valid constraints with a way to check an
output against each, and invalid constraints with the error they must get.

Used by test_structured_native.py (simulated decoding over SmolLM2's
vocabulary) and by the end-to-end tests with the model. Regular
expressions are Python-`re` compatible and meant with fullmatch semantics.
"""

import json
import re

import jsonschema

# (name, schema): varied shapes - nesting, arrays, enums, refs (recursive
# too), unions, formats, ranges, lengths.
JSON_SCHEMAS = [
    ("flat object", {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                     "required": ["name", "age"]}),
    ("optional keys", {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "null"},
                                                         "c": {"type": "number"}}}),
    ("mixed required", {"type": "object", "properties": {"id": {"type": "integer"}, "note": {"type": "string"},
                                                          "tags": {"type": "array", "items": {"type": "string"}}},
                        "required": ["id", "tags"]}),
    ("nested objects", {"type": "object", "properties": {
        "user": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 20},
            "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string",
                                                                                             "pattern": "^[0-9]{5}$"}},
                        "required": ["city", "zip"]}},
            "required": ["name", "address"]}},
        "required": ["user"]}),
    ("array of objects", {"type": "array", "items": {"type": "object", "properties": {
        "x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]}, "minItems": 1, "maxItems": 4}),
    ("string enum", {"type": "string", "enum": ["red", "green", "blue"]}),
    ("mixed enum", {"enum": ["on", "off", 0, 1, None, True, {"mode": "auto"}]}),
    ("const", {"type": "object", "properties": {"version": {"const": 2}, "kind": {"const": "event"}},
               "required": ["version", "kind"]}),
    ("defs ref", {"$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                                      "required": ["x", "y"]}},
                  "type": "object", "properties": {"start": {"$ref": "#/$defs/point"}, "end": {"$ref": "#/$defs/point"}},
                  "required": ["start", "end"]}),
    ("recursive tree", {"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer", "minimum": 0, "maximum": 99},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
        "required": ["value", "children"]}}, "$ref": "#/$defs/node"}),
    ("definitions ref", {"definitions": {"name": {"type": "string", "minLength": 1, "maxLength": 12}},
                         "type": "array", "items": {"$ref": "#/definitions/name"}, "maxItems": 3}),
    ("recursive linked list", {"type": "object", "properties": {
        "head": {"type": "integer"}, "tail": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
        "required": ["head", "tail"]}),
    ("anyOf union", {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "maxLength": 5},
                               {"type": "boolean"}]}),
    ("oneOf disjoint", {"type": "object", "properties": {"shape": {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "minimum": 0}},
         "required": ["kind", "r"]},
        {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "integer", "minimum": 1}},
         "required": ["kind", "side"]}]}}, "required": ["shape"]}),
    # Bounded (see the note above REGEXES): under greedy decoding with the
    # default f16 KV cache SmolLM2 fills an unbounded string here with
    # "1.2.3.1.1.1..." until max_tokens (with the f32 cache it wrote "123").
    ("type list", {"type": "object", "properties": {"maybe": {"type": ["string", "null"], "maxLength": 16}},
                   "required": ["maybe"]}),
    ("allOf merge", {"allOf": [
        {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        {"type": "object", "properties": {"label": {"type": "string", "maxLength": 8}}, "required": ["label"]}]}),
    ("formats", {"type": "object", "properties": {
        "day": {"type": "string", "format": "date"}, "at": {"type": "string", "format": "time"},
        "when": {"type": "string", "format": "date-time"}, "id": {"type": "string", "format": "uuid"},
        "mail": {"type": "string", "format": "email"}},
        "required": ["day", "at", "when", "id", "mail"]}),
    ("integer ranges", {"type": "object", "properties": {
        "percent": {"type": "integer", "minimum": 0, "maximum": 100},
        "temp": {"type": "integer", "minimum": -40, "maximum": 60},
        "big": {"type": "integer", "exclusiveMinimum": 1000},
        "neg": {"type": "integer", "exclusiveMaximum": 0}},
        "required": ["percent", "temp", "big", "neg"]}),
    ("number ranges", {"type": "object", "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "price": {"type": "number", "minimum": 0},
        "delta": {"type": "number", "minimum": -5, "maximum": 5}},
        "required": ["score", "price", "delta"]}),
    ("string lengths", {"type": "object", "properties": {
        "code": {"type": "string", "minLength": 3, "maxLength": 3},
        "title": {"type": "string", "minLength": 1, "maxLength": 30}},
        "required": ["code", "title"]}),
    ("array bounds", {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 6},
                      "minItems": 2, "maxItems": 5}),
    ("tuple", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}, {"type": "boolean"}],
               "items": False}),
    ("tuple with rest", {"type": "array", "prefixItems": [{"const": "header"}], "items": {"type": "number"},
                         "maxItems": 4}),
    ("additional properties schema", {"type": "object", "properties": {"name": {"type": "string"}},
                                      "required": ["name"], "additionalProperties": {"type": "integer"}}),
    ("additional properties true", {"type": "object", "properties": {"kind": {"enum": ["a", "b"]}},
                                    "required": ["kind"], "additionalProperties": True}),
    ("pattern", {"type": "object", "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"},
        "hex": {"type": "string", "pattern": "^#[0-9a-f]{6}$"}},
        "required": ["sku", "hex"]}),
    ("nested arrays", {"type": "array", "items": {"type": "array", "items": {"type": "number"}, "maxItems": 3},
                       "maxItems": 3}),
    ("free value", {"type": "object", "properties": {"payload": {}, "meta": True}, "required": ["payload"]}),
    ("product", {"title": "Product", "description": "A catalogue entry", "type": "object", "properties": {
        "name": {"type": "string", "description": "display name", "maxLength": 40},
        "price": {"type": "number", "minimum": 0},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "in_stock": {"type": "boolean"},
        "dimensions": {"type": "object", "properties": {"w": {"type": "number"}, "h": {"type": "number"}},
                       "required": ["w", "h"]}},
        "required": ["name", "price", "currency", "in_stock"]}),
]

# Prompts for schemas whose shape the model needs described to finish it
# (recursion, free values); the others get "Give the answer as JSON (<name>):".
JSON_PROMPTS = {
    "recursive tree": 'Example tree: {"value": 5, "children": [{"value": 6, "children": []}]}\n'
                      "A tree with one node of value 1 and no children, as JSON:",
    "recursive linked list": 'Example: the list 4 is {"head": 4, "tail": null}\nThe list 9 as JSON:',
    "formats": "A meeting as JSON: day 2024-05-01, at 10:30:00Z, when 2024-05-01T10:30:00Z, "
               "id 123e4567-e89b-12d3-a456-426614174000, mail ada@example.com:",
    "free value": "A JSON object whose payload is the number 42:",
    "additional properties true": 'A JSON object with kind "a" and one more short field:',
    # Any number of integer fields may follow the name: greedy SmolLM2 kept
    # adding them until max_tokens, so the prompt names the one it wants.
    "additional properties schema": 'A JSON object with a name and one integer field "age":',
}


def json_prompt(name):
    return JSON_PROMPTS.get(name, "Give the answer as JSON (%s):" % name)


# Python-re patterns, fullmatch semantics.
#
# The corpora mostly bound their repetitions ({m,n}, maxLength, maxItems):
# a constraint guarantees that a finished output is valid, not that the
# model finishes, and SmolLM2-135M under greedy decoding loops on an
# unbounded `+`, `*` or recursion ("100,100,100,..."), which max_tokens then
# cuts into an invalid prefix. Unbounded forms stay where the model ends
# them, and the simulations of test_structured_native walk them all.
REGEXES = [
    r"\d{3}-\d{3}-\d{4}",
    r"[A-Z][a-z]{2,10}",
    r"(yes|no|maybe)",
    r"[a-z]{1,12}@[a-z]{1,12}\.(com|org|net)",
    r"#[0-9a-fA-F]{6}",
    r"\d+(\.\d{1,2})?",
    r"(\w{1,12}\s){2}\w{1,12}",
    r"[^,\n]{1,10}(,[^,\n]{1,10}){2}",
    r"(?:[01]\d|2[0-3]):[0-5]\d",
    r"v\d+\.\d+\.\d+(-[a-z]+)?",
    r"\(\d{3}\) \d{3}-\d{4}",
    r"[A-Z]{2}\d{2} ?[A-Z0-9]{4}",
    r"(ab|cd)*e?",
    r"-?\d{1,3}(,\d{3}){0,4}",
    r"\S+ \S+",
    r"[aeiou]{3}\d?",
    r"[\u00e0-\u00ff]+!",
    r"^.{5}$",
    r"(?P<key>[a-z_]{1,16})=(?P<value>\d{1,6})(;[a-z_]{1,16}=\d{1,6}){0,2}",
]

CHOICES = [
    ["positive", "negative", "neutral"],
    ["yes", "no"],
    ["Paris", "London", "Berlin", "Madrid", "Rome"],
    ["\u00e9t\u00e9", "hiver", "\u6625", "say \"hi\""],
    ["A", "AB", "ABC"],
]


def _check_arithmetic(text):
    pos = 0

    def expr():
        nonlocal pos
        term()
        while pos < len(text) and text[pos] in "+-":
            pos += 1
            term()

    def term():
        nonlocal pos
        factor()
        while pos < len(text) and text[pos] in "*/":
            pos += 1
            factor()

    def factor():
        nonlocal pos
        if pos < len(text) and text[pos] == "(":
            pos += 1
            expr()
            assert text[pos] == ")", text
            pos += 1
            return
        start = pos
        while pos < len(text) and text[pos].isdigit():
            pos += 1
        assert 1 <= pos - start <= 4, text

    expr()
    assert pos == len(text), text


def _check_list(text):
    assert re.fullmatch(r"(- [a-zA-Z ]{1,30}\n){1,5}", text), text


def _check_key_values(text):
    assert re.fullmatch(r"[a-z]+: (\d+|\"[a-z ]*\")(\n[a-z]+: (\d+|\"[a-z ]*\")){0,3}", text), text


# (name, GBNF text, reference checker raising AssertionError/ValueError on a bad output).
GBNF_GRAMMARS = [
    ("arithmetic", r'''
root   ::= expr
expr   ::= term (("+" | "-") term){0,4}
term   ::= factor (("*" | "/") factor){0,4}
factor ::= [0-9]{1,4} | "(" expr ")"
''', _check_arithmetic),
    ("json", r'''
root    ::= value
value   ::= object | array | string | number | "true" | "false" | "null"
object  ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array   ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string  ::= "\"" ( [^"\\\x00-\x1f] | "\\" ["\\/nrt] )* "\""
number  ::= "-"? ( "0" | [1-9] [0-9]{0,8} ) ( "." [0-9]{1,6} )?
ws      ::= [ \n]{0,4}
''', json.loads),
    ("bullet list", r'''
root ::= item{1,5}
item ::= "- " [a-zA-Z ]{1,30} "\n"   # one bullet a line
''', _check_list),
    ("key values", r'''
root  ::= pair ("\n" pair){0,3}
pair  ::= [a-z]{1,12} ": " (num | str)
num   ::= [0-9]{1,6}
str   ::= "\"" [a-z ]{0,24} "\""
''', _check_key_values),
]

# (kind, payload, substring of the INVALID_ARGUMENT message). kind:
# json_schema (payload: JSON text), regex, gbnf, choice (payload: list).
INVALID_CONSTRAINTS = [
    ("json_schema", '{"type": "string", "format": "hostname"}', "unsupported format 'hostname'"),
    ("json_schema", '{"type": "integer", "multipleOf": 3}', "unsupported keyword 'multipleOf'"),
    ("json_schema", '{"type": "object", "properties": {"a": {"not": {"type": "string"}}}}',
     "unsupported keyword 'not' (at #/properties/a)"),
    ("json_schema", '{"type": ', "invalid JSON"),
    ("json_schema", '{"$ref": "#/$defs/missing"}', "unresolvable $ref '#/$defs/missing'"),
    ("json_schema", '{"type": "strng"}', "unknown type 'strng'"),
    ("json_schema", '{"type": "string", "pattern": "[a-"}', "regex: unterminated character class"),
    ("regex", "(abc", "regex: missing ')'"),
    ("regex", "(?=x)y", "unsupported construct '(?='"),
    ("regex", r"(a)\1", "backreferences are not supported"),
    ("regex", "a{5,2}", "min > max"),
    ("gbnf", "root ::= item\n", "undefined rule 'item'"),
    ("gbnf", 'root ::= root "x" | "y"\n', "left recursion: rule 'root'"),
    ("gbnf", 'root ::= "abc\n', "unterminated string literal"),
    ("gbnf", 'item ::= "a"\n', "no rule named 'root'"),
    ("choice", [], "the list of choices is empty"),
]


def check_json_schema_output(schema, text):
    """Raises if `text` is not one JSON value valid under `schema` (formats checked)."""
    value = json.loads(text)
    jsonschema.validate(value, schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def check_regex_output(pattern, text):
    assert re.fullmatch(pattern, text), f"{pattern!r} does not fullmatch {text!r}"


def check_choice_output(choices, text):
    assert text in choices, text
