"""Hostile constraints: what used to crash the process or take minutes of
the engine's time now compiles in near-linear time or is refused by a
stated bound, and the engine keeps serving (issue: reliability).

Found by hand on 2026-12-03: 100,000 nested GBNF parentheses and 30,000
nested regex groups overflowed the stack (SIGSEGV); a chain of 100,000
rules, a 10,000-property object and long choice lists compiled in
quadratic time; a regex that admits nothing failed at the first step with
a message about logits processors. No timings are asserted (the machine is
shared): the module's timeout is the bound that a regression would break.
"""

import json

import pytest

from vllm_cpp import Engine, InvalidArgumentError, RequestOutcome, SamplingParams, StructuredOutput

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=256, max_num_seqs=4) as eng:
        yield eng


def constrained(so, max_tokens=4):
    return SamplingParams.greedy(max_tokens=max_tokens, structured_output=so)


def assert_usable(engine):
    out = engine.complete("The capital of France is", SamplingParams.greedy(max_tokens=2))
    assert out.completion_tokens == 2


def refused(engine, so, *fragments):
    with pytest.raises(InvalidArgumentError) as info:
        engine.complete("Hi", constrained(so))
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)
    assert_usable(engine)


def doubling_grammar(levels):
    """d_i ::= d_(i+1) d_(i+1) | "a": every run of a's parses in
    exponentially many ways."""
    rules = ["root ::= d0"] + ['d%d ::= d%d d%d | "a"' % (i, i + 1, i + 1) for i in range(levels)]
    return "\n".join(rules + ['d%d ::= "a"' % levels])


def test_deeply_nested_gbnf_groups_are_refused(engine):
    grammar = "root ::= " + "(" * 100000 + '"a"' + ")" * 100000
    refused(engine, StructuredOutput("grammar", grammar), "nested too deeply (limit 256 levels")


def test_deeply_nested_regex_groups_are_refused(engine):
    refused(engine, StructuredOutput("regex", "(" * 30000 + "a" + ")" * 30000), "regex",
            "nested too deeply (limit 256 levels")


def test_nesting_within_the_bound_still_compiles(engine):
    out = engine.complete("Hi", constrained(StructuredOutput("regex", "(" * 200 + "ab" + ")" * 200)))
    assert out.text == "ab"


def test_a_long_chain_of_rules_compiles(engine):
    n = 100000
    rules = ["root ::= r0"] + ["r%d ::= r%d" % (i, i + 1) for i in range(n)] + ['r%d ::= "a"' % n]
    assert engine.complete("Hi", constrained(StructuredOutput("grammar", "\n".join(rules)))).text == "a"


def test_left_recursion_is_still_found_in_a_long_chain(engine):
    rules = ["root ::= r0"] + ["r%d ::= r%d" % (i, i + 1) for i in range(5000)] + ['r5000 ::= r17 "a" | "b"']
    refused(engine, StructuredOutput("grammar", "\n".join(rules)), "left recursion", "'r17'")


def test_an_object_with_many_optional_properties_compiles(engine):
    schema = {"type": "object", "properties": {"p%d" % i: {"type": "integer"} for i in range(10000)}}
    out = engine.complete("Hi", constrained(StructuredOutput("json_schema", json.dumps(schema)), max_tokens=8))
    assert out.text.startswith("{")


@pytest.mark.parametrize("kind", ["choice", "enum"])
def test_a_list_of_100k_strings_compiles(engine, kind):
    values = ["opt%d" % i for i in range(100000)]
    so = (StructuredOutput("choice", values) if kind == "choice"
          else StructuredOutput("json_schema", json.dumps({"enum": values})))
    text = engine.complete("Hi", constrained(so, max_tokens=16)).text
    assert (text if kind == "choice" else json.loads(text)) in values


def test_a_regex_that_admits_nothing_is_refused_at_compile_time(engine):
    refused(engine, StructuredOutput("regex", r"[^\s\S]"), "matches no string")


def test_dead_alternatives_are_dropped_not_fatal(engine):
    # "a" followed by an impossible class can never complete: the grammar
    # keeps only "b", so generation cannot get stuck after an "a".
    grammar = 'root ::= "a" [^\\x00-\\U0010FFFF] | "b"'
    assert engine.complete("Hi", constrained(StructuredOutput("grammar", grammar))).text == "b"


def test_too_ambiguous_a_grammar_fails_only_its_own_request(engine):
    texts = []
    good = engine.submit("Once upon a time", SamplingParams.greedy(max_tokens=24), lambda e: texts.append(e.delta))
    # min_tokens: the model may not end after one "a", so the ambiguity grows
    # whatever it would have chosen.
    bad = engine.submit("Hi", SamplingParams.greedy(max_tokens=16, min_tokens=16,
                                                    structured_output=StructuredOutput("grammar", doubling_grammar(18))),
                        lambda e: None)
    with pytest.raises(InvalidArgumentError) as info:
        bad.wait()
    assert "too ambiguous" in str(info.value)
    assert good.wait() is RequestOutcome.COMPLETED
    assert len("".join(texts)) > 0
    for r in (good, bad):
        r.close()
    assert_usable(engine)
