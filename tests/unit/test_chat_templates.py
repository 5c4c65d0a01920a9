"""The engine's chat-template renderer against jinja2 as transformers configures it.

Every fixture template (../shared/fixtures/chat_templates beside the
repository, or $VLLM_CPP_CHAT_TEMPLATES) is rendered over a matrix of conversations by the
engine (the render_chat_template test program, one process for the whole
matrix) and by tests/support/chat_reference.py; the texts must be equal byte for byte
and a template that raises in Python must raise in the engine with the same
message. Small templates then pin down each construct, Python's semantics,
error messages with line numbers, and robustness on garbage input.
"""

import glob
import json
import os
import pathlib
import random
import subprocess
import tempfile

import pytest

import chat_reference as ref
from native_build import build_native_tests

from fixture_dirs import CHAT_TEMPLATES_DIR as FIXTURES
TEMPLATES = sorted(glob.glob(str(FIXTURES / "*.jinja")))


@pytest.fixture(scope="module")
def build():
    return build_native_tests()


def engine_render(build, cases):
    """Renders every case in one render_chat_template process."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps(case, ensure_ascii=False) + "\n")
        path = f.name
    try:
        result = subprocess.run([str(build / "render_chat_template"), path], capture_output=True, timeout=120)
    finally:
        os.unlink(path)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    lines = result.stdout.decode("utf-8").splitlines()
    assert len(lines) == len(cases)
    return [json.loads(line) for line in lines]


# Python's error text inside the engine's "chat template error: [line N: ]..." message.
def engine_error_text(message):
    prefix = "chat template error: "
    assert message.startswith(prefix), message
    rest = message[len(prefix):]
    if rest.startswith("line "):
        rest = rest.split(": ", 1)[1]
    return rest


def assert_same(case, got, want, label):
    if want["ok"]:
        assert got["ok"], f"{label}: engine failed: {got.get('error')}"
        assert got["text"] == want["text"], f"{label}: renderings differ\nengine: {got['text']!r}\njinja2: {want['text']!r}"
    elif want["type"] == "RecursionError":  # Python's stack limit; the engine's own depth limit
        assert not got["ok"] and "nested too deeply" in got["error"], f"{label}: {got}"
    else:
        assert not got["ok"], f"{label}: jinja2 raised {want['type']}: {want['error']!r}, engine rendered {got['text']!r}"
        assert engine_error_text(got["error"]) == want["error"], f"{label}: {got['error']!r} vs {want['error']!r}"


# ------------------------------------------------------------------ the matrix

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
                "days": {"type": ["integer", "null"], "description": "Forecast days"},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Extra tags"},
            },
            "required": ["city"],
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {"name": "get_time", "description": "Current time.", "parameters": {"type": "object", "properties": {}}},
}

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
U1 = {"role": "user", "content": "Hi there"}
A1 = {"role": "assistant", "content": "Hello! How can I help?"}
U2 = {"role": "user", "content": "What is 2+2?"}
UNICODE_USER = {"role": "user", "content": "Grüße aus Köln — 東京の天気は？ 🌧️ «ok»\n\ttab \"quotes\" 'single' <b>&</b>"}
PARTS_USER = {"role": "user", "content": [{"type": "text", "text": "First part."}, {"type": "text", "text": "Second part."}]}
TOOL_CALL = {
    "role": "assistant", "content": None,
    "tool_calls": [{"id": "abc123DEF", "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'}}],
}
TOOL_RESULT = {"role": "tool", "tool_call_id": "abc123DEF", "content": '{"temperature": 21, "sky": "clear"}'}
# The assistant turn as agents send it back (issue 37): the openai SDK's
# message object dumped with its nulls, no content key at all, or the
# arguments already a mapping (LangChain's AIMessage.tool_calls).
SDK_TOOL_CALL = {
    "role": "assistant", "content": None, "refusal": None, "audio": None, "function_call": None,
    "tool_calls": [{"id": "abc123DEF", "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}],
}
BARE_TOOL_CALL = {"role": "assistant", "tool_calls": [
    {"id": "abc123DEF", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}
FOLLOW_UP = {"role": "user", "content": "And tomorrow?"}
THINKING_ANSWER = {"role": "assistant", "content": "<think>\nAdd them.\n</think>\n\n4"}
REASONING_ANSWER = {"role": "assistant", "content": "4", "reasoning_content": "Two plus two."}

CONVERSATIONS = {
    "single_user": [U1],
    "system_user": [SYSTEM, U1],
    "multi_turn": [U1, A1, U2],
    "system_multi_turn": [SYSTEM, U1, A1, U2],
    "ends_with_assistant": [SYSTEM, U1, A1],
    "unicode": [SYSTEM, UNICODE_USER],
    "text_parts": [PARTS_USER],
    "tool_round_trip": [SYSTEM, U1, TOOL_CALL, TOOL_RESULT, FOLLOW_UP],
    "tool_round_trip_no_system": [U1, TOOL_CALL, TOOL_RESULT],
    "tool_round_trip_sdk_nulls": [U1, SDK_TOOL_CALL, TOOL_RESULT, FOLLOW_UP],
    "tool_round_trip_no_content": [U1, BARE_TOOL_CALL, TOOL_RESULT],
    "thinking_history": [U1, THINKING_ANSWER, U2],
    "reasoning_content": [U2, REASONING_ANSWER],
    "double_user": [U1, U2],
    "system_only": [SYSTEM],
}

TOOLS = {"none": None, "one": [WEATHER_TOOL], "two": [WEATHER_TOOL, TIME_TOOL]}
KWARGS = {"none": None, "thinking_off": {"enable_thinking": False}, "thinking_on": {"enable_thinking": True}}


def matrix_cases():
    cases = []
    for template in TEMPLATES:
        for conv_name, messages in CONVERSATIONS.items():
            for tools_name, tools in TOOLS.items():
                if tools_name == "two" and conv_name not in ("system_user", "tool_round_trip"):
                    continue
                for agp in (True, False):
                    for kw_name, kwargs in KWARGS.items():
                        if kw_name != "none" and "qwen3" not in template:
                            continue
                        label = f"{pathlib.Path(template).stem}/{conv_name}/tools={tools_name}/agp={agp}/kw={kw_name}"
                        cases.append((label, dict(template=template, bos="<s>", eos="</s>", messages=messages,
                                                  tools=tools, add_generation_prompt=agp, kwargs=kwargs,
                                                  normalize=True)))
    return cases


@pytest.mark.timeout(300)
@pytest.mark.skipif(not TEMPLATES, reason="no chat template fixtures")
def test_fixture_templates_match_jinja2(build):
    cases = matrix_cases()
    got = engine_render(build, [c for _, c in cases])
    failures = []
    rendered = raised = 0
    for (label, case), result in zip(cases, got):
        want = ref.render_case(case)
        rendered += want["ok"]
        raised += not want["ok"]
        try:
            assert_same(case, result, want, label)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, f"{len(failures)} of {len(cases)} differ:\n" + "\n\n".join(failures[:10])
    # The matrix exercises both paths: renderings and template-raised errors.
    assert rendered > len(cases) // 2 and raised > 0


@pytest.mark.timeout(120)
@pytest.mark.skipif(not TEMPLATES, reason="no chat template fixtures")
def test_template_raised_errors_are_verbatim(build):
    cases = [
        dict(template=str(FIXTURES / "llama-2-chat.jinja"), messages=[U1, U2]),
        dict(template=str(FIXTURES / "gemma-2-it.jinja"), messages=[SYSTEM, U1]),
        dict(template=str(FIXTURES / "mistral-nemo-instruct-2407.jinja"), messages=[U1, U2]),
    ]
    for result in engine_render(build, cases):
        assert not result["ok"]
        assert not result["error"].startswith("chat template error: line"), result["error"]
    assert engine_render(build, cases[:1])[0]["error"] == (
        "chat template error: Conversation roles must alternate user/assistant/user/assistant/...")
    assert engine_render(build, cases[1:2])[0]["error"] == "chat template error: System role not supported"


# ------------------------------------------------------------------ small templates

CONTEXT = {
    "messages": [SYSTEM, U1, A1],
    "d": {"b": 1, "a": [1, 2, {"x": "y"}], "s": "text", "n": None, "t": True, "f": 1.5, "items": "key named items"},
    "xs": [3, 1, 2],
    "words": ["banana", "Apple", "cherry", "apple"],
    "s": "  Hello, World  ",
    "u": "héllo wörld ✓",
    "e": "",
    "nested": [{"name": "a", "v": 2, "tags": ["x"]}, {"name": "b", "v": 1}, {"name": "c", "v": 3, "tags": []}],
}

SNIPPETS = [
    # literals and printing like Python's str()
    "{{ 1 }}|{{ 1.0 }}|{{ 1e16 }}|{{ 1.5e-5 }}|{{ 0.1 + 0.2 }}|{{ -0.0 }}|{{ 10 / 4 }}|{{ 10 / 5 }}",
    "{{ true }}|{{ True }}|{{ none }}|{{ None }}|{{ [1, 'a', none, true, 1.5] }}|{{ {'k': 'v', 'n': [1]} }}",
    "{{ (1, 2) }}|{{ (1,) }}|{{ () }}|{{ 'it''s' }}|{{ [\"it's\"] }}|{{ ['a\"b'] }}|{{ ['x\\ny'] }}",
    "{{ d }}|{{ d.a }}|{{ xs }}|{{ 'a' 'b' }}|{{ 1_000 }}|{{ 0x1F }}|{{ 0o17 }}|{{ 0b101 }}",
    "{{ 'tab\\there' }}|{{ 'uni\\u00e9' }}|{{ 'x\\x41' }}|{{ 'keep\\d' }}|{{ \"q\\\"q\" }}",
    # arithmetic with Python semantics
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7.5 % 2 }} {{ -7.5 // 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }}",
    "{{ 'ab' * 3 }}|{{ 3 * 'ab' }}|{{ [1] * 2 }}|{{ 'a' + 'b' }}|{{ [1] + [2] }}|{{ 1 + 2.5 }}|{{ true + 1 }}|{{ -(3) }}",
    "{{ 1 ~ 2 ~ 'x' ~ none ~ undefined_thing }}|{{ 3 - 5 }}|{{ 2 * 3 + 4 }}|{{ 2 * (3 + 4) }}|{{ -2 ** 2 }}",
    # comparisons, membership, logic
    "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 != 2 }} {{ 2 >= 2 }}",
    "{{ 'ell' in 'hello' }} {{ 2 in xs }} {{ 'a' in d }} {{ 'zz' not in d }} {{ 5 not in xs }} {{ 'x' in undefined_thing }}",
    "{{ 1 and 2 }} {{ 0 and 2 }} {{ 0 or 'x' }} {{ '' or [] }} {{ not 0 }} {{ not none }} {{ 'a' if xs else 'b' }}|{{ 'a' if e }}|",
    "{{ d == {'b': 1, 'a': [1, 2, {'x': 'y'}], 's': 'text', 'n': none, 't': true, 'f': 1.5, 'items': 'key named items'} }} {{ [1] == (1,) }}",
    # attribute / item access and slicing
    "{{ d.b }}|{{ d['b'] }}|{{ d.a[2].x }}|{{ d.a.0 }}|{{ xs[-1] }}|{{ xs[1:] }}|{{ xs[::-1] }}|{{ xs[:-1] }}|{{ xs[5:] }}",
    "{{ u[0] }}|{{ u[-1] }}|{{ u[1:4] }}|{{ u[::-1] }}|{{ u[::2] }}|{{ u|length }}|{{ s[2:7] }}|{{ 'abc'[-5:] }}",
    "{{ d['items'] }}|{{ d.missing }}|{{ d.missing is defined }}|{{ d['missing'] is defined }}|{{ xs[10] is defined }}",
    "{{ messages[0]['role'] }}|{{ messages[-1].content }}|{{ messages|length }}|{{ messages[1:]|map(attribute='role')|list }}",
    # tests
    "{{ 1 is number }} {{ 1.5 is float }} {{ true is number }} {{ true is integer }} {{ 1 is integer }} {{ 's' is string }}",
    "{{ d is mapping }} {{ xs is iterable }} {{ 's' is iterable }} {{ none is none }} {{ x is undefined }} {{ d is not none }}",
    "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ 'a' is equalto 'a' }} {{ 2 is in xs }}",
    "{{ false is false }} {{ 0 is false }} {{ true is true }} {{ 1 is sameas 1 }} {{ none is sameas none }} {{ 'ab' is lower }} {{ 'AB' is upper }}",
    "{{ xs is sequence }} {{ d is callable }} {{ range is callable }} {{ 2 is gt 1 }} {{ 2 is lt 1 }} {{ 2 is ge 2 }} {{ 2 is ne 3 }}",
    # string filters and methods
    "[{{ s|trim }}]|[{{ s.strip() }}]|[{{ s.lstrip() }}]|[{{ s.rstrip() }}]|[{{ '--x--'.strip('-') }}]|[{{ 'xxaxx'|trim('x') }}]",
    "{{ s|upper }}|{{ s|lower }}|{{ 'hello world-foo (bar)'|title }}|{{ 'hELLO'|capitalize }}|{{ s.upper() }}|{{ 'Ab Cd'.title() }}",
    "{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}|{{ ' a b '.split(none, 1) }}",
    "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'hello'.find('l') }} {{ 'hello'.count('l') }}",
    "{{ 'a-b-c'|replace('-', '+') }}|{{ 'a-b-c'.replace('-', '', 1) }}|{{ 'abc'.replace('', '.') }}|{{ '-'.join(['a', 'b']) }}",
    "{{ 'l1\\nl2\\n\\nl4'|indent }}|{{ 'l1\\nl2'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(width='> ', blank=true) }}",
    "{{ 'one two  three'|wordcount }}|{{ 'x'|center(5) }}|{{ 'ab'|center(5) }}|{{ 'a\\nb\\r\\nc'.splitlines() }}",
    "{{ 'abc'|reverse }}|{{ 'Hello'|list }}|{{ '%s-%d-%05.2f' % ('a', 3, 2.5) }}|{{ '%s and %s'|format('x', 'y') }}|{{ '%(a)s' % {'a': 1} }}",
    "{{ '  \\u3000x\\u00a0 '|trim }}|{{ 'ab'.removeprefix('a') }}|{{ '42'.isdigit() }}|{{ 'a1'.isalnum() }}|{{ 'x'.isupper() }}",
    # list / dict filters
    "{{ xs|sort }}|{{ xs|sort(reverse=true) }}|{{ words|sort }}|{{ words|sort(case_sensitive=true) }}|{{ nested|sort(attribute='v')|map(attribute='name')|join }}",
    "{{ words|unique|list }}|{{ words|unique(case_sensitive=true)|list }}|{{ xs|first }}|{{ xs|last }}|{{ xs|min }}|{{ xs|max }}|{{ xs|sum }}",
    "{{ xs|join(', ') }}|{{ nested|join(', ', attribute='name') }}|{{ xs|reverse|list }}|{{ xs|length }}|{{ xs|count }}|{{ d|length }}",
    "{{ d|items|list }}|{{ d.items()|list }}|{{ d.keys()|list }}|{{ d.values()|list }}|{{ d.get('b') }}|{{ d.get('zz', 'dflt') }}|{{ d.get('zz') }}",
    "{{ nested|selectattr('v', 'gt', 1)|map(attribute='name')|list }}|{{ nested|rejectattr('tags')|map(attribute='name')|list }}",
    "{{ nested|selectattr('tags', 'defined')|list|length }}|{{ xs|select('odd')|list }}|{{ xs|reject('equalto', 1)|list }}|{{ ['a', '', 'b']|select|list }}",
    "{{ words|map('upper')|list }}|{{ nested|map(attribute='missing', default='-')|list }}|{{ xs|batch(2)|list }}|{{ xs|batch(2, 0)|list }}",
    "{{ d|dictsort }}|{{ {'b': 2, 'a': 1}|dictsort(by='value', reverse=true) }}|{{ [1, 2, 1]|unique|list }}|{{ nested|map(attribute='tags.0', default='none')|list }}",
    "{{ undefined_thing|default('dflt') }}|{{ none|default('dflt') }}|{{ ''|default('dflt', true) }}|{{ undefined_thing|d('x') }}|{{ undefined_thing|length }}",
    "{{ '42'|int }}|{{ '4.7'|int }}|{{ 'x'|int }}|{{ 'x'|int(7) }}|{{ '0x1A'|int(0, 16) }}|{{ 3.9|int }}|{{ '2.5'|float }}|{{ 'x'|float }}|{{ 4|float }}",
    "{{ -3|abs }}|{{ (-3)|abs }}|{{ 2.5|round }}|{{ 3.5|round }}|{{ 2.675|round(2) }}|{{ 2.1|round(0, 'ceil') }}|{{ 7|round }}|{{ 1|string ~ 2 }}",
    "{{ xs|list|string }}|{{ 12|string|length }}|{{ d.a|tojson }}|{{ [xs, none]|tojson }}|{{ 'x\"y'|tojson }}|{{ u|tojson }}",
    "{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ d|tojson(sort_keys=true) }}|{{ u|tojson(ensure_ascii=true) }}|{{ {}|tojson(indent=4) }}",
    "{{ '<a&b>'|e }}|{{ '<a>'|safe }}|{{ d|attr('items') is defined }}|{{ d|attr('b') is defined }}|{{ 1.0|tojson }}|{{ 1e16|tojson }}",
    # statements
    "{% if xs %}yes{% elif d %}no{% else %}never{% endif %}{% if e %}x{% elif none %}y{% else %}z{% endif %}",
    "{% for x in xs %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }};{% endfor %}",
    "{% for x in xs %}{{ loop.previtem }}>{{ x }}<{{ loop.nextitem }}|{{ loop.cycle('a', 'b') }};{% endfor %}",
    "{% for x in [] %}a{% else %}empty{% endfor %}|{% for x in xs if x > 1 %}{{ x }}:{{ loop.index }}:{{ loop.length }},{% endfor %}",
    "{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}|{% for k in d %}{{ k }},{% endfor %}|{% for (a, b) in [[1, 2]] %}{{ a + b }}{% endfor %}",
    "{% for x in xs %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}",
    "{% for x in 'ab' %}{{ x }}{% endfor %}|{% for x in undefined_thing %}never{% endfor %}|{% for c in u %}{{ c }}.{% endfor %}",
    "{% set x = 1 %}{% for i in xs %}{{ x }}{% set x = i %}{{ x }},{% endfor %}{{ x }}",
    "{% set ns = namespace(total=0, seen=[]) %}{% for i in xs %}{% set ns.total = ns.total + i %}{% endfor %}{{ ns.total }}|{{ ns.seen }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}|{% set t = 1, 2 %}{{ t }}|{% set x %}captured {{ a }}{% endset %}{{ x|upper }}",
    "{% set x | upper %}block{% endset %}{{ x }}|{% filter upper %}filtered {{ a }}{% endfilter %}|{% with y = 5 %}{{ y }}{% endwith %}{{ y }}",
    "{% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }}|{{ greet('b', '?') }}|{{ greet(name='c', punct='.') }}|{{ greet() }}",
    "{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(5) }}|{% macro v() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ v(1, 2, k=3) }}",
    "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner {{ 1 + 1 }}{% endcall %}",
    "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(item) each(xs) %}[{{ item }}]{% endcall %}",
    "{% macro m() %}{{ late }}{% endmacro %}{% set late = 'seen' %}{{ m() }}",
    "{% raw %}{{ not rendered }}{% endraw %}|{# a comment #}|{{ range(3)|list }}|{{ range(1, 10, 3)|list }}|{{ dict(a=1, b=2) }}",
    "{% generation %}gen {{ 1 }}{% endgeneration %}|{{ namespace(a=1).a }}",
    # whitespace control, trim_blocks and lstrip_blocks
    "line1\n  {% if true %}\n  indented\n  {% endif %}\nline2\n",
    "a  {%- if true -%}  b  {%- endif -%}  c\n  {{- ' d ' -}}  \n e {#- c -#} f\n",
    "  {%+ if true %}kept{% endif +%}\nx\n    {# comment #}\ny",
    "{% for i in xs %}\n    {{ i }}\n{% endfor %}\n",
    "x\r\ny\rz\n\n",
    "{% if true %}   \t\n{% endif %}a\n  {{ 'v' }}  \n  {% set q = 1 %}  \nend",
    "\n\n  {%- if true %}\n\tA{% endif -%}\n\n  B  {{- ' ' }}",
    "{% raw -%}  raw {{ x }}  {%- endraw %}|  {% raw %}\n r{% endraw %}\n",
    "{{ 'multi\nline' }}|{{ {'a': {'b': 1}} }}|{{ [[1, 2], [3]] }}",
]


@pytest.mark.timeout(120)
def test_small_templates_match_jinja2(build):
    cases = [dict(source=src, messages=CONTEXT["messages"], kwargs={k: v for k, v in CONTEXT.items() if k != "messages"})
             for src in SNIPPETS]
    failures = []
    for src, case, got in zip(SNIPPETS, cases, engine_render(build, cases)):
        want = ref.render_case(case)
        try:
            assert_same(case, got, want, repr(src))
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, f"{len(failures)} of {len(cases)} differ:\n" + "\n\n".join(failures)


# Runtime errors: jinja2 raises, the engine raises with the same message (and the line).
RUNTIME_ERRORS = [
    "{{ undefined_thing.attr }}",
    "{{ d.missing.deeper }}",
    "{{ undefined_thing + 1 }}",
    "{{ undefined_thing() }}",
    "{{ 'a' + 1 }}",
    "{{ 1 + 'a' }}",
    "{{ [1] + 'a' }}",
    "{{ 1 / 0 }}",
    "{{ 1 // 0 }}",
    "{{ 1 % 0 }}",
    "{{ 'a' < 1 }}",
    "{{ -'a' }}",
    "{{ 'a' * 1.5 }}",
    "{{ 1 in 'abc' }}",
    "{{ 1 in none }}",
    "{{ none|length }}",
    "{% for x in none %}{% endfor %}",
    "{% for x in 5 %}{% endfor %}",
    "{{ undefined_thing|tojson }}",
    "{{ raise_exception('custom failure: ' ~ 42) }}",
    "{% for a, b in [[1, 2, 3]] %}{% endfor %}",
    "{% for a, b in [[1]] %}{% endfor %}",
    "{% set x = 1 %}{% set x.y = 2 %}",
    "{{ range(200000)|length }}",
    "{{ [].append(1) }}",
    "{{ d.pop('b') }}",
    "{{ 5|items|list }}",
    "{{ 'abc'.split('') }}",
    "{{ xs[::0] }}",
    "{{ 'x'.nonexistent() }}",
    "{{ ns.missing }}{% set ns = namespace() %}{{ ns.missing.x }}",
    "{{ '-'.join([1, 2]) }}",
    "{{ '%c'|format(none) }}",
    "{{ '%c' % 'ab' }}",
    "{{ '%c-%d'|format(undefined_thing, 5) }}",
    "{{ '%c'|format(1114112) }}",
    "{% set big = 1e308 %}{{ '%d' % (big * 10) }}",  # not constants: jinja2 would fold them into a name 'inf'
    "{% set big = 1e308 %}{{ '%d' % (big * 10 - big * 10) }}",
]


@pytest.mark.timeout(120)
def test_runtime_errors_match_jinja2(build):
    cases = [dict(source="line one\n" + src, messages=[], kwargs={k: v for k, v in CONTEXT.items() if k != "messages"})
             for src in RUNTIME_ERRORS]
    failures = []
    for src, case, got in zip(RUNTIME_ERRORS, cases, engine_render(build, cases)):
        want = ref.render_case(case)
        if want["ok"]:
            failures.append(f"{src!r}: jinja2 rendered {want['text']!r}; not an error case")
            continue
        try:
            assert_same(case, got, want, repr(src))
            if want["type"] != "TemplateError":  # not raise_exception: the engine names the line
                assert got["error"].startswith("chat template error: line 2: "), got["error"]
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, "\n\n".join(failures)


# Syntax errors and unsupported constructs: refused at parse time with the line.
SYNTAX_ERRORS = [
    ("ok\n{% if %}", 2, "Expected an expression"),
    ("\n\n{{ a b }}", 3, "expected token 'end of print statement', got 'b'"),
    ("{% if x %}\nno end", 2, "Unexpected end of template"),
    ("{% for x in y %}{% endif %}", 1, "Encountered unknown tag 'endif'"),
    ("{% foo %}", 1, "Encountered unknown tag 'foo'"),
    ("a\n{{ x|nosuchfilter }}", 2, "No filter named 'nosuchfilter'"),
    ("{{ x is nosuchtest }}", 1, "No test named 'nosuchtest'"),
    ("\n{% extends 'base.html' %}", 2, "the 'extends' tag is not supported"),
    ("{% include 'x' %}", 1, "the 'include' tag is not supported"),
    ("{% block b %}{% endblock %}", 1, "the 'block' tag is not supported"),
    ("{% for x in y recursive %}{% endfor %}", 1, "recursive for loops are not supported"),
    ("{% break %}", 1, "'break' outside of a for loop"),
    ("{{ 'unterminated }}", 1, "unexpected end of string literal"),
    ("{{ x ", 1, "unexpected end of template, expected '}}'"),
    ("{# open comment", 1, "Missing end of comment tag"),
    ("{% raw %}never closed", 1, "Missing end of raw directive"),
    ("{{ (1 }}", 1, "unexpected '}', expected ')'"),
    ("{{ 1 ] }}", 1, "unexpected ']'"),
    ("{{ x @ y }}", 1, "unexpected char '@'"),
    ("{{ f(*args) }}", 1, "*args / **kwargs in calls are not supported"),
    ("{% set 1 = 2 %}", 1, "can't assign to 'integer'"),
    ("{{ 99999999999999999999 }}", 1, "does not fit in 64 bits"),
    ("{{ x is defined is defined }}", 1, "You cannot chain multiple tests with is"),
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("source,line,fragment", SYNTAX_ERRORS)
def test_syntax_errors_name_the_line(build, source, line, fragment):
    got = engine_render(build, [dict(source=source)])[0]
    assert not got["ok"]
    assert got["error"].startswith(f"chat template line {line}: "), got["error"]
    assert fragment in got["error"], got["error"]


def test_normalization_and_plain_rendering(build):
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        TOOL_CALL,
        {"role": "tool", "content": None},
    ]
    probe = "{% for m in messages %}{{ m.content|tojson }}|{{ m.tool_calls|tojson if m.tool_calls else '' }};{% endfor %}"
    got = engine_render(build, [dict(source=probe, messages=messages, normalize=True)])[0]
    assert got == ref.render_case(dict(source=probe, messages=messages, normalize=True))
    assert '"a\\nb"' in got["text"] and '"arguments": {"city": "Paris"' in got["text"]

    bad = [
        dict(source="x", messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}], normalize=True),
        dict(source="x", messages=[{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{bad"}}]}],
             normalize=True),
        dict(source="x", messages=["not an object"], normalize=True),
        dict(source="x", messages={"not": "a list"}),
        dict(source="x", messages=[], tools={"not": "a list"}),
        dict(source="x", messages=[], kwargs=[1]),
    ]
    errors = [r["error"] for r in engine_render(build, bad)]
    assert "'messages[0].content[0]': image_url parts are decoded by the caller into images" in errors[0]
    assert "'messages[0].tool_calls[0].function.arguments' is not valid JSON" in errors[1]
    assert "'messages[0]' must be an object" in errors[2]
    assert "messages must be a JSON array" in errors[3]
    assert "tools must be a JSON array or null" in errors[4]
    assert "chat_template_kwargs must be a JSON object" in errors[5]


def test_percent_formats_past_the_engines_values_are_errors(build):
    """Where Python would print an unbounded integer or keep a lone surrogate
    in a str, the engine (64-bit integers, UTF-8 text) refuses by name."""
    sources = ["{{ '%d' % 1e300 }}", "{{ '%x'|format(-1e19) }}", "{{ '%c' % 55296 }}"]
    errors = [r.get("error", "") for r in engine_render(build, [dict(source=s, messages=[]) for s in sources])]
    assert "%d format: 1e+300 is outside the engine's 64-bit integers" in errors[0], errors[0]
    assert "%x format: -1e+19 is outside the engine's 64-bit integers" in errors[1], errors[1]
    assert "%c arg is a surrogate" in errors[2], errors[2]


@pytest.mark.timeout(120)
def test_garbage_templates_never_crash(build):
    """Random and mutated templates: each renders or fails with a message, never crashes or hangs."""
    rng = random.Random(1234)
    pieces = ["{{", "}}", "{%", "%}", "{#", "#}", "-", "+", " if ", " for ", " in ", " endfor ", " endif ", " set ",
              "x", "'s'", "\"", "(", ")", "[", "]", "{", "}", "|", "trim", ".", ",", "1", "loop", "\n", " ", "~",
              " is ", "defined", "macro", "call", "=", ":", "*", "raw", "endraw", "é", "\\"]
    sources = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(400)]
    fixture_texts = [pathlib.Path(t).read_text(encoding="utf-8") for t in TEMPLATES]
    for text in fixture_texts:
        for _ in range(25):
            chars = list(text)
            for _ in range(rng.randint(1, 5)):
                op = rng.random()
                pos = rng.randrange(len(chars))
                if op < 0.4:
                    del chars[pos]
                elif op < 0.7:
                    chars.insert(pos, rng.choice("{}%#-+()[]|'\"\n x"))
                else:
                    chars[pos] = rng.choice("{}%#-+()[]|'\"\n x")
            sources.append("".join(chars))
    sources += ["{{" * 500 + "x" + "}}" * 500, "{% if x %}" * 300, "{{ " + "(" * 400 + "1" + ")" * 400 + " }}",
                "{{ " + "not " * 1000 + "x }}", "{{ " + "-" * 1000 + "1 }}",
                "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
                "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"]
    cases = [dict(source=s, messages=[SYSTEM, U1, A1], tools=[WEATHER_TOOL], add_generation_prompt=True) for s in sources]
    results = engine_render(build, cases)
    for source, result in zip(sources, results):
        assert result["ok"] or result["error"].startswith("chat template"), (source, result)
    assert any(r["ok"] for r in results) and any(not r["ok"] for r in results)


def test_json_unit_tests(build):
    result = subprocess.run([str(build / "test_json")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout[-4000:]
    assert result.stdout.strip().splitlines()[-1].endswith(" 0 failed")
