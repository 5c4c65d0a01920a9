"""Structured output end to end on SmolLM2: every constrained output
validates (JSON Schemas with jsonschema, regexes with re.fullmatch, choices,
GBNF grammars with reference checkers), greedy and sampled, batched with
unconstrained requests; invalid constraints are refused by name; jump-forward
keeps greedy output identical and takes fewer model steps."""

import json

import pytest

import vllm_cpp
from vllm_cpp import Engine, InvalidArgumentError, RequestOutcome, SamplingParams, StructuredOutput, Toggle

import structured_cases as cases

pytestmark = pytest.mark.timeout(600)

MAX_TOKENS = 200


@pytest.fixture(scope="module")
def engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=512, max_num_seqs=64, jump_forward=Toggle.OFF) as eng:
        yield eng


def collect_into(deltas):
    def on_event(event):
        if not event.finished:
            deltas.append(event.delta)
    return on_event


def run_batch(eng, jobs):
    """jobs: (prompt, SamplingParams); all submitted at once, with two
    unconstrained requests alongside. Returns each job's text and whether
    max_tokens cut it (jump-forward is off, so each step delivers one event
    of one token's text)."""
    free = [("Tell me a story about a dragon.", SamplingParams(temperature=0.8, seed=3, max_tokens=64)),
            ("List some fruits:", SamplingParams.greedy(max_tokens=48))]
    outs = [[] for _ in jobs + free]
    reqs = [eng.submit(p, params, collect_into(out)) for (p, params), out in zip(jobs + free, outs)]
    for r in reqs:
        assert r.wait() is RequestOutcome.COMPLETED
        r.close()
    return [("".join(o), len(o) >= MAX_TOKENS) for o in outs[:len(jobs)]]


def params_for(so, sampled, i):
    if sampled:
        return SamplingParams(temperature=0.8, top_p=0.95, seed=100 + i, max_tokens=MAX_TOKENS, structured_output=so)
    return SamplingParams.greedy(max_tokens=MAX_TOKENS, structured_output=so)


def check_all(eng, items, make_so, check, prompt_for):
    for sampled in (False, True):
        jobs = [(prompt_for(item), params_for(make_so(item), sampled, i)) for i, item in enumerate(items)]
        results = run_batch(eng, jobs)
        # A constraint cannot make a cut at max_tokens complete (a free JSON
        # value or a \d+ may run on, e.g. counting 1, 2, 3, ...): only the
        # outputs the constraint ended are validated, at least 3 in 4.
        assert sum(cut for _, cut in results) <= len(items) // 4, results
        failures = []
        for item, (text, cut) in zip(items, results):
            if cut:
                continue
            try:
                check(item, text)
            except Exception as exc:  # noqa: BLE001 - collected for one report
                failures.append((item if not isinstance(item, tuple) else item[0], text, repr(exc)[:200]))
        assert not failures, failures


def test_json_schemas_validate(engine):
    assert len(cases.JSON_SCHEMAS) >= 25
    check_all(engine, cases.JSON_SCHEMAS, lambda it: StructuredOutput.json_schema(it[1]),
              lambda it, text: cases.check_json_schema_output(it[1], text),
              lambda it: cases.json_prompt(it[0]))


def test_regexes_fullmatch(engine):
    assert len(cases.REGEXES) >= 15
    check_all(engine, cases.REGEXES, StructuredOutput.regex, cases.check_regex_output,
              lambda it: "Write text matching %s:" % it)


def test_choices_are_exactly_one_option(engine):
    check_all(engine, cases.CHOICES, StructuredOutput.choice, cases.check_choice_output,
              lambda it: "Pick one of %s:" % ", ".join(it))


def test_gbnf_grammars_parse(engine):
    check_all(engine, cases.GBNF_GRAMMARS, lambda it: StructuredOutput.grammar(it[1]), lambda it, text: it[2](text),
              lambda it: "Write a %s:" % it[0])


def test_json_object_mode(engine):
    # json_object mode bounds nothing but numbers, so the prompt names the
    # keys for the model to stop after: asked only for "a cat", greedy
    # SmolLM2 with the f16 KV cache repeats "breed_weight_..." keys until
    # max_tokens (every token valid JSON, the object never closed).
    c = engine.complete("A JSON object describing a cat with its name and age:",
                        SamplingParams.greedy(max_tokens=MAX_TOKENS, structured_output=StructuredOutput.json_object()))
    assert c.finish_reason == "stop"
    assert isinstance(json.loads(c.text), dict)


@pytest.mark.parametrize("kind, payload, message", cases.INVALID_CONSTRAINTS,
                         ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(cases.INVALID_CONSTRAINTS)])
def test_invalid_constraints_are_refused_by_name(engine, kind, payload, message):
    def build():
        if kind == "json_schema":
            return StructuredOutput.json_schema(payload)
        if kind == "regex":
            return StructuredOutput.regex(payload)
        if kind == "gbnf":
            return StructuredOutput.grammar(payload)
        return StructuredOutput.choice(payload)

    with pytest.raises((InvalidArgumentError, vllm_cpp.InvalidConfigurationError)) as info:
        engine.complete("Hi", SamplingParams.greedy(max_tokens=4, structured_output=build()))
    if isinstance(info.value, InvalidArgumentError):
        assert message in str(info.value)
    assert engine.complete("Hi", SamplingParams.greedy(max_tokens=2)).completion_tokens == 2


# --- jump-forward ------------------------------------------------------------------------

FIXED_KEYS = {
    "type": "object",
    "properties": {
        "customer_identification_number": {"type": "integer"},
        "customer_full_legal_name": {"type": "string", "maxLength": 24},
        "preferred_communication_channel": {"enum": ["electronic_mail", "telephone_call", "postal_letter"]},
    },
    "required": ["customer_identification_number", "customer_full_legal_name", "preferred_communication_channel"],
}


def jf_run(smollm2_path, toggle):
    with Engine.load(smollm2_path, max_model_len=512, jump_forward=toggle) as eng:
        params = SamplingParams.greedy(max_tokens=MAX_TOKENS, structured_output=StructuredOutput.json_schema(FIXED_KEYS))
        c = eng.complete("A customer record as JSON:", params)
        return c, eng.stats()


def test_jump_forward_keeps_greedy_output_and_saves_steps(smollm2_path, monkeypatch):
    monkeypatch.delenv("VT_ENABLE_JUMP_FORWARD", raising=False)
    monkeypatch.delenv("VLLM_CPP_ENABLE_JUMP_FORWARD", raising=False)
    off, off_stats = jf_run(smollm2_path, Toggle.OFF)
    on, on_stats = jf_run(smollm2_path, Toggle.ON)
    assert on == off
    cases.check_json_schema_output(FIXED_KEYS, on.text)
    assert off_stats["jump_forward_tokens"] == 0
    assert on_stats["jump_forward_tokens"] > 10
    assert on_stats["model_steps"] < off_stats["model_steps"] - 10


def test_jump_forward_env_var_overrides_the_field(smollm2_path, monkeypatch):
    monkeypatch.delenv("VLLM_CPP_ENABLE_JUMP_FORWARD", raising=False)
    monkeypatch.setenv("VT_ENABLE_JUMP_FORWARD", "1")
    _, stats = jf_run(smollm2_path, Toggle.OFF)
    assert stats["jump_forward_tokens"] > 0
    monkeypatch.setenv("VT_ENABLE_JUMP_FORWARD", "0")
    _, stats = jf_run(smollm2_path, Toggle.ON)
    assert stats["jump_forward_tokens"] == 0


def test_jump_forward_project_env_var_wins_over_its_upstream_alias(smollm2_path, monkeypatch):
    # VLLM_CPP_ENABLE_JUMP_FORWARD is the project's name; VT_ENABLE_JUMP_FORWARD
    # (the upstream ABI's) is read only when it is not set.
    monkeypatch.setenv("VLLM_CPP_ENABLE_JUMP_FORWARD", "1")
    monkeypatch.setenv("VT_ENABLE_JUMP_FORWARD", "0")
    _, stats = jf_run(smollm2_path, Toggle.OFF)
    assert stats["jump_forward_tokens"] > 0
    monkeypatch.setenv("VLLM_CPP_ENABLE_JUMP_FORWARD", "0")
    monkeypatch.setenv("VT_ENABLE_JUMP_FORWARD", "1")
    _, stats = jf_run(smollm2_path, Toggle.ON)
    assert stats["jump_forward_tokens"] == 0
