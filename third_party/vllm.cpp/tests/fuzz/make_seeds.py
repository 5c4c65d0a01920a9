#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (corpus/NAME/) and dictionaries
(dicts/NAME.dict): small valid inputs of each parser, so fuzzing starts from
the shapes real inputs have. The tokenizer.json seeds are two of the crafted
files of tests/golden/make_added_tokens_golden.py; the GGUF seeds need the
`gguf` package.

    python third_party/vllm.cpp/tests/fuzz/make_seeds.py
"""
import json
import pathlib
import struct
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent.parent
JSON_TOKENS = ["{", "}", "[", "]", ":", ",", "true", "false", "null", '"', "\\u", "\\ud83d\\ude00", "-0.5e-3", "1E400",
               "\\"]


def put(target, name, data):
    folder = HERE / "corpus" / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def write_dict(target, tokens):
    (HERE / "dicts").mkdir(exist_ok=True)
    with open(HERE / "dicts" / f"{target}.dict", "w", encoding="utf-8") as f:
        for t in tokens:
            f.write('"' + "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else f"\\x{ord(c):02x}" for c in t)
                    + '"\n')


def json_seeds():
    put("fuzz_json", "object", '{"a": [1, -2.5e3, true, false, null], "b": {"c": "\\u00e9\\ud83d\\ude00\\n"}, "": 0}')
    put("fuzz_json", "numbers", '[0, -0, 1e308, 1E-400, 123456789012345678901234567890, 0.1, -9223372036854775808]')
    put("fuzz_json", "nested", '[[[[{"x": [[]]}]]]]')
    put("fuzz_json", "string", '"tab\\there \\"quoted\\" \\\\ \\/ \\b\\f\\r"')
    write_dict("fuzz_json", JSON_TOKENS)


def chat_request_seeds():
    put("fuzz_chat_request", "simple", json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
    put("fuzz_chat_request", "tools", json.dumps({
        "messages": [{"role": "system", "content": [{"type": "text", "text": "be brief"}]},
                     {"role": "user", "content": "weather?"},
                     {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                     {"role": "tool", "tool_call_id": "call_1", "content": "21C"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
                   "properties": {"city": {"type": "string"}}}}}],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "max_tokens": 32, "seed": 7,
        "stop": ["\n\n", "END"], "n": 2, "logprobs": True, "top_logprobs": 3, "stream": True,
        "stream_options": {"include_usage": True}, "presence_penalty": 0.5, "frequency_penalty": 0.1}))
    put("fuzz_chat_request", "response_format", json.dumps({
        "messages": [{"role": "user", "content": "json"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}},
        "chat_template_kwargs": {"enable_thinking": False}, "continue_final_message": False,
        "add_generation_prompt": True, "max_completion_tokens": 10, "ignore_eos": False, "min_tokens": 1,
        "repetition_penalty": 1.1, "logit_bias": {"5": 1.0}, "user": "u"}))
    put("fuzz_chat_request", "request_options", json.dumps({
        "messages": [{"role": "user", "content": "pick"}], "structured_outputs": {"choice": ["a", "b"]},
        "allowed_token_ids": [5, 6, 7], "stop_token_ids": [2], "include_stop_str_in_output": True,
        "skip_special_tokens": False, "truncate_prompt_tokens": 8, "guided_regex": None,
        "logit_bias": {"6": -100, "7": 2.5}}))
    write_dict("fuzz_chat_request", JSON_TOKENS + [f'"{k}"' for k in (
        "messages", "role", "content", "user", "assistant", "system", "tool", "developer", "tools", "tool_calls",
        "tool_choice", "function", "name", "arguments", "parameters", "type", "text", "response_format", "json_schema",
        "json_object", "schema", "temperature", "top_p", "top_k", "min_p", "n", "stop", "seed", "max_tokens",
        "max_completion_tokens", "logprobs", "top_logprobs", "stream", "stream_options", "logit_bias", "required",
        "auto", "none", "chat_template_kwargs", "continue_final_message", "add_generation_prompt", "tool_call_id",
        "allowed_token_ids", "stop_token_ids", "include_stop_str_in_output", "skip_special_tokens",
        "truncate_prompt_tokens", "prompt_logprobs", "structured_outputs", "guided_json", "guided_regex",
        "guided_choice", "guided_grammar", "choice", "regex", "grammar", "json")])


def completion_request_seeds():
    put("fuzz_completion_request", "simple", json.dumps({"model": "m", "prompt": "Once upon a time", "max_tokens": 8}))
    put("fuzz_completion_request", "prompts", json.dumps({
        "prompt": ["a", "b"], "n": 2, "seed": 7, "stream": True, "stream_options": {"include_usage": True},
        "logprobs": 3, "echo": True, "return_token_ids": True, "return_tokens_as_token_ids": True}))
    put("fuzz_completion_request", "token_ids", json.dumps({
        "prompt": [[1, 2, 3], [4, 5]], "max_tokens": 0, "echo": True, "prompt_logprobs": 2, "best_of": 1,
        "truncate_prompt_tokens": 2, "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}))
    put("fuzz_completion_request", "structured", json.dumps({
        "prompt": "pick", "structured_outputs": {"choice": ["a", "b"]}, "stop": ["\n"], "temperature": 0,
        "logit_bias": {"5": 1.0}, "suffix": None, "priority": -3}))
    write_dict("fuzz_completion_request", JSON_TOKENS + [f'"{k}"' for k in (
        "prompt", "model", "n", "best_of", "echo", "logprobs", "prompt_logprobs", "suffix", "max_tokens", "stream",
        "stream_options", "include_usage", "return_token_ids", "return_tokens_as_token_ids", "response_format",
        "json_schema", "json_object", "schema", "structured_outputs", "guided_json", "guided_regex", "guided_choice",
        "guided_grammar", "temperature", "seed", "stop", "priority", "truncate_prompt_tokens")])


def jinja_seeds():
    put("fuzz_jinja", "chatml", "{%- for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] | trim + '<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}"
        "{{ '<|im_start|>assistant\\n' }}{%- endif %}")
    put("fuzz_jinja", "tools", """{%- macro render(t) -%}{{ t.function.name }}({{ t.function.parameters | tojson }}){%- endmacro -%}
{%- if tools is not none %}{% for t in tools %}{{ render(t) }}{% if not loop.last %}, {% endif %}{% endfor %}{% endif %}
{%- set ns = namespace(last=none) %}
{%- for m in messages %}
  {%- if m.role == 'assistant' and m.tool_calls is defined %}
    {%- for c in m.tool_calls %}<tool_call>{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}</tool_call>{% endfor %}
  {%- elif m.role == 'tool' %}<tool_response>{{ m.content }}</tool_response>{% set ns.last = loop.index0 %}
  {%- else %}{{ m.role | upper }}: {{ m.content | replace('\\n', ' ') }}{{ eos_token if loop.last else '' }}
  {%- endif %}
{%- endfor %}{{ bos_token ~ (ns.last | string) }}{% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}""")
    put("fuzz_jinja", "expressions", """{% set xs = [1, 2, 3] + [4] %}{{ xs | join(',') }} {{ xs[1:] | length }} {{ (xs | map('string') | list)[0] }}
{{ 'Hello'.startswith('He') }} {{ 'a,b'.split(',') }} {{ {'k': 1}.items() | list }} {{ 7 // 2 }} {{ 7 % 3 }} {{ 2 ** 8 }}
{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | first }} {{ range(3) | sum }}
{%- raw %}{{ not parsed }}{% endraw %}{# comment #}{% if 'x' in 'xyz' and 1 < 2 or false %}yes{% else %}no{% endif %}
{{ "%s-%d" | format("a", 3) }} {{ messages[-1]['content'][:5] | capitalize }} {{ none is none }} {{ 1.5 | int }} {{ '\\u00e9' | length }}""")
    write_dict("fuzz_jinja", [
        "{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", "for", "in", "endfor", "if", "elif", "else", "endif", "set",
        "endset", "macro", "endmacro", "call", "endcall", "filter", "endfilter", "raw", "endraw", "namespace",
        "loop.index", "loop.last", "messages", "message['role']", "tools", "tojson", "join", "map", "select",
        "selectattr", "length", "trim", "upper", "replace", "default", "format", "is defined", "is none", "not", "and",
        "or", "~", "|", "**", "//", "[::-1]", "range(", "raise_exception(", "strftime_now(", ".items()", ".split(",
        ".startswith(", "caller()", "break", "continue"])


def grammar_seeds():
    put("fuzz_gbnf", "arith", 'root ::= expr\nexpr ::= term ("+" term)*\nterm ::= [0-9]+ | "(" expr ")"\n')
    put("fuzz_gbnf", "json", 'root ::= object\nobject ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? '
        '"}"\nvalue ::= object | string | [0-9]+ | "true" | "null"\nstring ::= "\\"" ( [^"\\\\\\x7F\\x00-\\x1F] | '
        '"\\\\" ["\\\\/bfnrt] )* "\\""\nws ::= [ \\t\\n]{0,4}\n')
    put("fuzz_gbnf", "classes", 'root ::= [^a-z\\u00e9-\\U0001F600] "x"? ("y" | "z"){2,5} comment\n# a comment\n'
        'comment ::= "\\n"\n')
    write_dict("fuzz_gbnf", ["::=", "root", "|", "(", ")", "*", "+", "?", "{2,5}", "[", "]", "[^", "\\x41", "\\u00e9",
                             "\\U0001F600", "\\n", '"', "#", "-", "."])
    put("fuzz_json_schema", "object", json.dumps({"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z]+$"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "tags": {"type": "array", "items": {"enum": ["a", "b", 3]}, "minItems": 1, "maxItems": 3},
        "kind": {"const": "x"}, "score": {"type": "number"}, "ok": {"type": "boolean"}},
        "required": ["name"], "additionalProperties": False}))
    put("fuzz_json_schema", "refs", json.dumps({"$defs": {"node": {"type": "object", "properties": {
        "value": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]},
        "next": {"$ref": "#/$defs/node"}}}}, "$ref": "#/$defs/node"}))
    put("fuzz_json_schema", "combinators", json.dumps({"oneOf": [
        {"type": "array", "prefixItems": [{"type": "integer"}], "items": False},
        {"allOf": [{"type": "object"}, {"properties": {"a": {"type": "string", "format": "uuid"}}}]}]}))
    write_dict("fuzz_json_schema", JSON_TOKENS + [f'"{k}"' for k in (
        "type", "object", "array", "string", "integer", "number", "boolean", "null", "properties", "required",
        "items", "prefixItems", "additionalProperties", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "$defs",
        "definitions", "#/$defs/", "minLength", "maxLength", "pattern", "format", "date-time", "minimum", "maximum",
        "exclusiveMinimum", "minItems", "maxItems", "uniqueItems", "minProperties")])
    for i, r in enumerate([r"[a-z]+@[a-z]+\.(com|org)", r"(\d{3})-\d{4}|\w+\s*", r"(?:ab|c){2,4}?[^\n\]]*",
                           r"\u00e9.\p{L}?$", r"^(a|b)*?c{0,}x+[\x00-\x7f]"]):
        put("fuzz_regex", f"pattern{i}", r)
    write_dict("fuzz_regex", ["(", ")", "(?:", "|", "*", "+", "?", "*?", "{2,}", "{1,3}", "[", "]", "[^", "\\d", "\\w",
                              "\\s", "\\D", "\\b", "^", "$", ".", "\\x7f", "\\u00e9", "\\p{L}", "-", "\\"])


def tokenizer_seeds():
    # The first byte picks the tokenizer (fuzz_tokenizer.cpp) and the flags.
    texts = ["Hello world! 12345 don't", "  tabs\tand\nnewlines\r\n  ", "<|endoftext|>hello<|im_start|> <tool>x",
             "caf\u00e9 \u4e2d\u6587 \U0001F600 e\u0301", "<s>fox bar</s> a baz qu", "\xff\xfe invalid"]
    for sel in range(15):
        t = texts[sel % len(texts)]
        raw = t.encode("latin-1") if t.endswith("invalid") else t.encode()
        put("fuzz_tokenizer", f"text{sel}", bytes([sel | (0xC0 if sel % 2 else 0)]) + raw)
    golden = json.loads((ROOT / "tests" / "golden" / "tokenizer_json_added_tokens.json").read_text(encoding="utf-8"))
    for entry in golden["tokenizers"]:
        if entry["name"] in ("byte_level_nfc", "metaspace_normalizer"):
            put("fuzz_tokenizer_json", f"{entry['name']}.json", json.dumps(entry["doc"], ensure_ascii=False))


def parser_seeds():
    # Byte 0 picks the dialect, byte 1 the streaming piece size.
    outputs = {0: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
               1: '{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "f", "arguments": {}}',
               2: '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]',
               3: '[get_weather(city="Paris", days=[1, 2], x=None, y={"a": True}), f()]',
               4: '[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
               5: '{"city": "Paris"}',
               # issue 42's families (fuzz_tool_parsers.cpp's kDialects order)
               6: '<tool_call>\n<function=f>\n<parameter=n>\n3\n</parameter>\n</function>\n</tool_call>',
               7: '<tool_call>f\n<arg_key>n</arg_key>\n<arg_value>3</arg_value>\n</tool_call>',
               8: '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{"n": 3}\n```'
                  '<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
               9: '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{"n": 3}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
               10: '<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>'
                   '{"n": 3}<|tool_call_end|><|tool_calls_section_end|>',
               11: '<|tool_call|>[{"name": "f", "arguments": {"n": 3}}]',
               12: 'functools[{"name": "f", "arguments": {"n": 3}}]',
               13: '<|python_start|>[f(n=3)]<|python_end|>',
               14: '<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>commentary to=functions.f '
                   '<|constrain|>json<|message|>{"n": 3}'}
    for d, text in outputs.items():
        put("fuzz_tool_parsers", f"dialect{d}", bytes([d, 3]) + ("Sure. " + text).encode())
    write_dict("fuzz_tool_parsers", ["<tool_call>", "</tool_call>", "[TOOL_CALLS]", '{"name": ', '"arguments": ',
                                     '"parameters": ', "<|python_tag|>", "[", "]", "(", ")", "=", "None", "True", "{",
                                     "}", ";", ",", '"', "\\n", "<function=", "</function>", "<parameter=",
                                     "</parameter>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
                                     "<|tool_call|>", "functools[", "<|start|>", "<|channel|>", "<|message|>",
                                     "<|end|>", "<|call|>", " to=functions.f", "<|constrain|>",
                                     "<|tool_calls_section_begin|>", "<|tool_call_begin|>",
                                     "<|tool_call_argument_begin|>", "<|tool_call_end|>"])
    for d, text in enumerate(["<think>plan</think>answer", "reasoning only</think>after", "[THINK]x[/THINK]y", "plain",
                              "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>y",
                              "<think>x</think>y", "Here is my thought process: x Here is my response: y",
                              "x</think>y", "<seed:think>x</seed:think>y"]):
        put("fuzz_reasoning_parsers", f"dialect{d}", bytes([d, 2]) + text.encode())
    write_dict("fuzz_reasoning_parsers", ["<think>", "</think>", "[THINK]", "[/THINK]", "\\n", "<|channel|>",
                                          "<|message|>", "<|end|>", "<|start|>", "<seed:think>", "</seed:think>",
                                          "Here is my thought process:", "Here is my response:"])


def safetensors_seeds():
    header = json.dumps({"__metadata__": {"format": "pt"},
                         "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
                         "b": {"dtype": "F16", "shape": [3], "data_offsets": [16, 22]},
                         "c": {"dtype": "BF16", "shape": [1, 1], "data_offsets": [22, 24]}}).encode()
    put("fuzz_safetensors", "three_tensors", struct.pack("<Q", len(header)) + header + bytes(range(24)))


def gguf_seeds():
    import gguf
    import numpy as np

    printable = list(range(33, 127)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    symbols, extra = [], 0
    for b in range(256):
        symbols.append(chr(b) if b in printable else chr(256 + extra))
        extra += b not in printable
    (HERE / "corpus" / "fuzz_gguf").mkdir(parents=True, exist_ok=True)
    for name, model in (("gpt2", "gpt2"), ("spm", "llama")):
        w = gguf.GGUFWriter(str(HERE / "corpus" / "fuzz_gguf" / f"{name}.gguf"), "llama")
        w.add_block_count(1)
        w.add_context_length(64)
        w.add_embedding_length(4)
        w.add_uint32("llama.attention.head_count", 1)
        w.add_float32("llama.rope.freq_base", 10000.0)
        w.add_bool("general.flag", True)
        w.add_array("general.tags", ["a", "b"])
        w.add_array("general.numbers", [1, 2, 3])
        w.add_tokenizer_model(model)
        if model == "gpt2":
            tokens = symbols + ["he", "<|endoftext|>"]
            w.add_tokenizer_pre("llama-bpe")
            w.add_token_list(tokens)
            w.add_token_types([1] * 257 + [3])
            w.add_token_merges(["h e"])
            w.add_bos_token_id(len(tokens) - 1)
            w.add_eos_token_id(len(tokens) - 1)
        else:
            tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581", "a", "\u2581a"]
            w.add_token_list(tokens)
            w.add_token_types([2, 3, 3] + [6] * 256 + [1, 1, 1])
            w.add_token_scores([0.0] * len(tokens))
            w.add_bos_token_id(1)
            w.add_eos_token_id(2)
        w.add_tensor("token_embd.weight", np.arange(16, dtype=np.float32).reshape(4, 4))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()


def kv_transfer_seeds():
    """fuzz_kv_transfer: an even first byte and a config; an odd one, a cut
    length (0xffff: none) and bytes XOR-ed over the target's valid record."""
    configs = {
        "config_directory": {"kv_connector": "SharedStorageConnector", "kv_role": "kv_both",
                             "kv_connector_extra_config": {"shared_storage_path": "/tmp/kv"}},
        "config_redis": {"kv_connector": "RedisConnector", "kv_role": "kv_consumer",
                         "kv_connector_extra_config": {"url": "redis://:pw@host:6380/2", "timeout_ms": 500}},
    }
    for name, config in configs.items():
        put("fuzz_kv_transfer", name, b"\x00" + json.dumps(config).encode())
    put("fuzz_kv_transfer", "record_intact", b"\x01" + struct.pack("<H", 0xFFFF))
    put("fuzz_kv_transfer", "record_truncated", b"\x01" + struct.pack("<H", 80))
    # One bit of the fingerprint (offset 16) flipped: intact bytes, checksum refused.
    put("fuzz_kv_transfer", "record_other_model", b"\x01" + struct.pack("<H", 0xFFFF) + bytes(16) + b"\x01")


def main():
    for make in (json_seeds, chat_request_seeds, completion_request_seeds, jinja_seeds, grammar_seeds,
                 tokenizer_seeds, parser_seeds, safetensors_seeds, gguf_seeds, kv_transfer_seeds):
        make()
    print("written")


if __name__ == "__main__":
    sys.exit(main())
