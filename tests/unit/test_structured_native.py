"""The structured-output engine's native tests and decoding simulations.

test_grammar (no model), test_structured_vocab and test_grammar_compiler
(SmolLM2's vocabulary) are C++ unit tests. structured_tool simulates decoding over the real
vocabulary for every constraint of structured_cases.py - random allowed
tokens, then steering to the grammar's end - and each output is checked
here with jsonschema, re.fullmatch, json.loads or the grammar's reference
checker. Invalid constraints must be refused with the expected message.
"""

import json
import subprocess

import pytest

import structured_cases as cases
from native_build import build_native_tests

SIMULATIONS_PER_CASE = 4


@pytest.fixture(scope="module")
def build():
    return build_native_tests()


def run_program(build, *args):
    result = subprocess.run([str(build / args[0]), *map(str, args[1:])], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{args[0]} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result.stdout


def check_summary(output):
    summary = output.strip().splitlines()[-1]
    assert summary.endswith(" 0 failed"), output[-4000:]


@pytest.mark.timeout(120)
def test_grammar_unit_tests(build):
    check_summary(run_program(build, "test_grammar"))


@pytest.mark.timeout(300)
def test_structured_vocab(build, smollm2_path):
    check_summary(run_program(build, "test_structured_vocab", smollm2_path))


@pytest.mark.timeout(300)
def test_grammar_compiler(build, smollm2_path):
    """Compiles on workers, shared; budgets; deadlines that leave the matcher usable."""
    check_summary(run_program(build, "test_grammar_compiler", smollm2_path))


def simulate(build, model, tmp_path, constraints, runs=SIMULATIONS_PER_CASE):
    """constraints: [(kind, payload)]; returns {index: [("OK"|..., text or message)]}."""
    lines = []
    for kind, payload in constraints:
        if kind == "choice":
            data = "\n".join(c.encode().hex() for c in payload).encode()
        else:
            data = payload.encode()
        lines.append(f"{kind}\t{data.hex()}\t{runs}")
    path = tmp_path / "cases.tsv"
    path.write_text("\n".join(lines) + "\n")
    results = {}
    for line in run_program(build, "structured_tool", model, "simulate", path).splitlines():
        fields = line.split("\t")
        index, status = int(fields[0]), fields[1]
        if status == "COMPILED":
            continue
        value = fields[2] if status == "ERROR" else bytes.fromhex(fields[2]).decode("utf-8")
        results.setdefault(index, []).append((status, value))
    return results


def assert_all_valid(results, count, check):
    assert sorted(results) == list(range(count))
    for index, runs in results.items():
        for status, text in runs:
            assert status == "OK", f"case {index}: {status} {text!r}"
            check(index, text)


@pytest.mark.timeout(300)
def test_json_schema_simulations(build, smollm2_path, tmp_path):
    schemas = [schema for _, schema in cases.JSON_SCHEMAS]
    assert len(schemas) >= 25
    results = simulate(build, smollm2_path, tmp_path, [("json_schema", json.dumps(s)) for s in schemas])
    assert_all_valid(results, len(schemas), lambda i, text: cases.check_json_schema_output(schemas[i], text))


@pytest.mark.timeout(300)
def test_json_object_simulations(build, smollm2_path, tmp_path):
    results = simulate(build, smollm2_path, tmp_path, [("json_object", "")], runs=8)
    assert_all_valid(results, 1, lambda i, text: isinstance(json.loads(text), dict) or pytest.fail(text))


@pytest.mark.timeout(300)
def test_regex_simulations(build, smollm2_path, tmp_path):
    assert len(cases.REGEXES) >= 15
    results = simulate(build, smollm2_path, tmp_path, [("regex", p) for p in cases.REGEXES])
    assert_all_valid(results, len(cases.REGEXES), lambda i, text: cases.check_regex_output(cases.REGEXES[i], text))


@pytest.mark.timeout(300)
def test_choice_simulations(build, smollm2_path, tmp_path):
    results = simulate(build, smollm2_path, tmp_path, [("choice", c) for c in cases.CHOICES])
    assert_all_valid(results, len(cases.CHOICES), lambda i, text: cases.check_choice_output(cases.CHOICES[i], text))


@pytest.mark.timeout(300)
def test_gbnf_simulations(build, smollm2_path, tmp_path):
    grammars = cases.GBNF_GRAMMARS
    results = simulate(build, smollm2_path, tmp_path, [("gbnf", text) for _, text, _ in grammars], runs=6)
    assert_all_valid(results, len(grammars), lambda i, text: grammars[i][2](text))


@pytest.mark.timeout(300)
def test_invalid_constraints_are_refused(build, smollm2_path, tmp_path):
    invalid = cases.INVALID_CONSTRAINTS
    results = simulate(build, smollm2_path, tmp_path, [(kind, payload) for kind, payload, _ in invalid], runs=1)
    for index, (kind, payload, needle) in enumerate(invalid):
        status, message = results[index][0]
        assert status == "ERROR", f"{kind} {payload!r} was accepted"
        assert needle in message, f"{kind} {payload!r}: {message!r} lacks {needle!r}"
