"""Engine options beyond v10's struct (vllm_engine_load_with_options): the
one Python table behind Engine.load, EngineBuilder, LLM and the CLI flags;
chat templates given at load and per request (SmolLM2 overriding its own,
Gemma 3 270M, which has none); KV cache type and budget, threads, ISA; every
refusal by name with the engine still usable."""

import argparse
import json
import os
import platform

import pytest

import vllm_cpp
from vllm_cpp import Engine, EngineBuilder, InvalidArgumentError, InvalidConfigurationError, SamplingParams
from vllm_cpp.cli.engine_args import add_engine_args, engine_options
from vllm_cpp.core import (
    ENGINE_OPTION_TABLE,
    ENGINE_OPTIONS,
    _normalize_options,
    native_model_params,
    native_options_json,
)

pytestmark = pytest.mark.timeout(300)

HI = [{"role": "user", "content": "Hi"}]
# Renders each message as <<content>>, so the prompt's text is known exactly.
MARKER_TEMPLATE = "{% for m in messages %}<<{{ m.content }}>>{% endfor %}"
# Gemma 3's turn format (its instruction model's template, reduced to text turns).
GEMMA_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<start_of_turn>"
                  "{{ 'model' if m.role == 'assistant' else m.role }}\n{{ m.content }}<end_of_turn>\n"
                  "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")
JSON_OPTIONS = {"chat_template": MARKER_TEMPLATE, "kv_cache_dtype": "float32",
                "kv_cache_memory_bytes": 16 << 20, "num_threads": 1, "isa": "scalar"}


# -- the table ---------------------------------------------------------------

def test_every_option_is_a_keyword_and_a_builder_method():
    import inspect
    keywords = list(inspect.signature(Engine.load).parameters)[1:]
    assert keywords == list(ENGINE_OPTIONS) == [o.name for o in ENGINE_OPTION_TABLE]
    for option in ENGINE_OPTION_TABLE:
        method = getattr(EngineBuilder, option.name)
        assert method.__doc__ == option.doc and isinstance(method(Engine.builder("m"), None), EngineBuilder)


def test_new_options_travel_in_the_options_json_not_the_struct():
    options = _normalize_options(dict(JSON_OPTIONS, max_model_len=64))
    assert json.loads(native_options_json(options)) == JSON_OPTIONS
    p, _keep = native_model_params("m.gguf", options)
    assert p.max_model_len == 64
    assert native_options_json(_normalize_options({"max_model_len": 64})) is None
    b = Engine.builder("m.gguf")
    for name, value in JSON_OPTIONS.items():
        b = getattr(b, name)(value)
    assert b.options == _normalize_options(JSON_OPTIONS)


@pytest.mark.parametrize("options", [
    {"chat_template": 3},
    {"kv_cache_dtype": 16},
    {"kv_cache_memory_bytes": 2**63},
    {"kv_cache_memory_bytes": 1.5},
    {"num_threads": "2"},
    {"num_threads": 2**31},
    {"isa": ["avx2"]},
])
def test_values_the_abi_cannot_carry(options):
    with pytest.raises(InvalidConfigurationError):
        Engine.load("does-not-matter.gguf", **options)


def test_nul_in_a_template_names_the_option():
    with pytest.raises(vllm_cpp.InteriorNulError) as info:
        Engine.load("does-not-matter.gguf", chat_template="a\0b")
    assert info.value.field == "chat_template"


def test_cli_flags_come_from_the_table(tmp_path):
    parser = argparse.ArgumentParser()
    add_engine_args(parser)
    template = tmp_path / "t.jinja"
    template.write_text(MARKER_TEMPLATE)
    args = parser.parse_args(["--chat-template", str(template), "--kv-cache-dtype", "fp32",
                              "--kv-cache-memory-bytes", "1048576", "--num-threads", "2", "--isa", "avx2",
                              "--no-enable-prefix-caching", "--scheduling-policy", "lpm", "--tool-call-parser", "hermes"])
    options = engine_options(args)
    assert options["chat_template"] == MARKER_TEMPLATE  # the file's text
    assert (options["kv_cache_dtype"], options["kv_cache_memory_bytes"], options["num_threads"], options["isa"]) == \
        ("fp32", 1048576, 2, "avx2")
    normalized = _normalize_options(options)
    assert normalized["prefix_caching"] == vllm_cpp.Toggle.OFF and normalized["scheduler"] == vllm_cpp.SchedulerPolicy.LPM
    assert normalized["tool_parser"] == "hermes"
    assert engine_options(parser.parse_args(["--chat-template", "{{ messages[0].content }}"]))["chat_template"] == \
        "{{ messages[0].content }}"  # text, not a file
    with pytest.raises(SystemExit):
        parser.parse_args(["--chat-template", str(tmp_path / "missing.jinja")])


def test_load_chat_template_as_vllm():
    from vllm_cpp.chat_template import load_chat_template
    assert load_chat_template("{{ x }}") == "{{ x }}"
    with pytest.raises(ValueError, match="missing.jinja"):
        load_chat_template("missing.jinja")


# -- the engine --------------------------------------------------------------

def _chat_ids_of(engine, text):
    return engine.tokenize(text, add_special_tokens=False)


def test_overriding_template_renders_the_new_one(smollm2_path, engine):
    own = engine.tokenize_chat({"messages": HI})
    with Engine.load(smollm2_path, max_model_len=256, chat_template=MARKER_TEMPLATE) as eng:
        ids = eng.tokenize_chat({"messages": HI})
        assert ids == _chat_ids_of(eng, "<<Hi>>") and ids != own
        answer = eng.chat({"messages": HI, "max_tokens": 4, "temperature": 0})
        assert answer["usage"]["prompt_tokens"] == len(ids)
        assert eng.options["chat_template"] == MARKER_TEMPLATE


def test_request_template_renders_per_request(engine):
    request = {"messages": HI, "chat_template": "[{{ messages[0].content }}]"}
    assert engine.tokenize_chat(request) == _chat_ids_of(engine, "[Hi]")
    answer = engine.chat(dict(request, max_tokens=3, temperature=0))
    assert answer["usage"]["prompt_tokens"] == len(_chat_ids_of(engine, "[Hi]"))
    with pytest.raises(InvalidArgumentError, match="chat_template"):
        engine.chat(dict(request, chat_template="{% if %}"))
    with pytest.raises(InvalidArgumentError, match="chat_template_kwargs.chat_template"):
        engine.chat({"messages": HI, "chat_template_kwargs": {"chat_template": "x"}})
    with pytest.raises(InvalidArgumentError, match="chat_template"):
        engine.chat({"messages": HI, "chat_template": ""})


def test_template_without_one_in_the_model(gemma3_gguf):
    with Engine.load(gemma3_gguf, max_model_len=256) as plain:
        fallback = plain.tokenize_chat({"messages": HI})
    with Engine.load(gemma3_gguf, max_model_len=256, chat_template=GEMMA_TEMPLATE) as eng:
        ids = eng.tokenize_chat({"messages": HI})
        assert ids == _chat_ids_of(eng, "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n")
        assert ids != fallback
        answer = eng.chat({"messages": [{"role": "user", "content": "What is the capital of France?"}],
                           "max_tokens": 16, "temperature": 0})
        assert answer["choices"][0]["message"]["content"].strip()


@pytest.mark.parametrize("template, words", [
    ("{% for m in messages %}", ("chat template", "endfor")),
    ("{{ 1 + }}", ("chat template",)),
    ("{% include 'x' %}", ("chat template", "include")),
])
def test_template_that_does_not_parse_is_refused_at_load(smollm2_path, engine, template, words):
    with pytest.raises(InvalidArgumentError) as info:
        Engine.load(smollm2_path, max_model_len=128, chat_template=template)
    message = str(info.value).lower()
    assert all(w in message for w in words), message
    assert engine.complete("Hi", SamplingParams.greedy(max_tokens=2)).completion_tokens >= 1


@pytest.mark.parametrize("options, words", [
    ({"kv_cache_dtype": "fp8"}, ("kv_cache_dtype", "fp8")),
    ({"kv_cache_dtype": "fp8_e5m2"}, ("fp8",)),
    ({"kv_cache_dtype": "bfloat16"}, ("bfloat16",)),
    ({"kv_cache_dtype": "int4"}, ("kv_cache_dtype",)),
    ({"kv_cache_memory_bytes": 0}, ("kv_cache_memory_bytes",)),
    ({"kv_cache_memory_bytes": 1 << 20, "num_blocks": 64}, ("kv_cache_memory_bytes", "num_blocks")),
    ({"num_threads": 0}, ("num_threads",)),
    ({"num_threads": 5000}, ("num_threads",)),
    ({"isa": "sse4"}, ("isa",)),
    ({"chat_template": ""}, ("chat_template",)),
])
def test_engine_refuses_by_name(smollm2_path, engine, options, words):
    with pytest.raises(InvalidArgumentError) as info:
        Engine.load(smollm2_path, max_model_len=128, **options)
    assert all(w in str(info.value) for w in words), str(info.value)
    assert engine.complete("Hi", SamplingParams.greedy(max_tokens=2)).completion_tokens >= 1


def _native_load_refusal(struct_fields, options_json):
    """The INVALID_ARGUMENT text of vllm_engine_load_with_options called
    directly: `struct_fields` set on a vllm_model_params, `options_json` as
    given (the model file is never read: the refusal comes first)."""
    from vllm_cpp._ffi import ffi, lib
    p, keep = native_model_params("does-not-exist.gguf", {})
    for name, value in struct_fields.items():
        if isinstance(value, str):
            keep.append(ffi.new("char[]", value.encode()))
            value = keep[-1]
        setattr(p, name, value)
    out = ffi.new("vllm_engine**")
    status = lib.vllm_engine_load_with_options(p, options_json.encode() if options_json else ffi.NULL, out)
    assert status == lib.VLLM_ERR_INVALID_ARGUMENT and out[0] == ffi.NULL
    return ffi.string(lib.vllm_last_error()).decode()


# One row per refusal of the engine's options parser: the keyword Engine.load
# takes, the same value as a vllm_model_params field or an options JSON key,
# and the start of the one text the engine gives it either way. Python does
# not check these (the struct and the JSON carry them): the engine answers.
PARSER_REFUSALS = [
    ({"block_size": 2000}, {"block_size": 2000}, None, "'block_size' must be between 1 and 1024 (got 2000)"),
    # A Toggle outside 0-2 is refused in Python (test_api_surface pins it):
    # the struct's field still meets the parser's text.
    (None, {"enable_prefix_caching": 7}, None, "'enable_prefix_caching' must be 0 (default), 1 (on) or 2 (off) (got 7)"),
    (None, {"enable_jump_forward": -1}, None, "'enable_jump_forward' must be 0 (default), 1 (on) or 2 (off) (got -1)"),
    ({"max_num_seqs": 64, "max_num_batched_tokens": 32}, {"max_num_seqs": 64, "max_num_batched_tokens": 32}, None,
     "'max_num_batched_tokens' (32) must not be below max_num_seqs (64)"),
    ({"scheduler": "sjf"}, {"scheduling_policy": "sjf"}, None, "unknown scheduling_policy 'sjf'"),
    ({"num_threads": 0}, {}, '{"num_threads": 0}', "'num_threads' must be between 1 and 1024 (got 0)"),
    ({"isa": "sse4"}, {}, '{"isa": "sse4"}', "'isa' must be scalar, avx2, avx512, amx or neon (got 'sse4')"),
    ({"kv_cache_dtype": "int4"}, {}, '{"kv_cache_dtype": "int4"}', "'kv_cache_dtype' must be auto, float16"),
    ({"kv_cache_memory_bytes": 0}, {}, '{"kv_cache_memory_bytes": 0}', "'kv_cache_memory_bytes' must be between 1"),
    ({"structured_compile_timeout_ms": 0}, {}, '{"structured_compile_timeout_ms": 0}',
     "'structured_compile_timeout_ms' must be between 1 and 3600000 (got 0)"),
    ({"chat_template": ""}, {}, '{"chat_template": ""}', "'chat_template' must not be empty"),
]


@pytest.mark.parametrize("keywords, struct_fields, options_json, message", PARSER_REFUSALS,
                         ids=[next(iter(row[0] or row[1])) for row in PARSER_REFUSALS])
def test_one_text_per_option_through_python_the_struct_and_the_json(keywords, struct_fields, options_json, message):
    native = _native_load_refusal(struct_fields, options_json)
    assert native.startswith(message), native
    if keywords is not None:
        with pytest.raises(InvalidArgumentError) as info:
            Engine.load("does-not-exist.gguf", **keywords)
        assert str(info.value) == native


def test_struct_fields_stay_out_of_the_options_json():
    # v10's C test pins a struct field in the options JSON as refused.
    assert "unknown engine option 'max_model_len' in options_json" in _native_load_refusal({}, '{"max_model_len": 64}')


@pytest.mark.skipif(os.environ.get("VLLM_CPP_KV_CACHE_MB") is not None, reason="VLLM_CPP_KV_CACHE_MB overrides")
def test_kv_budget_below_one_sequence_is_refused(smollm2_path):
    with pytest.raises(InvalidArgumentError, match="kv_cache_memory_bytes .*max_model_len"):
        Engine.load(smollm2_path, max_model_len=256, kv_cache_memory_bytes=4096)


@pytest.mark.skipif(os.environ.get("VLLM_CPP_KV_CACHE_MB") or os.environ.get("VLLM_CPP_KV_CACHE_DTYPE"),
                    reason="an environment override is set")
def test_kv_dtype_and_budget_size_the_cache(smollm2_path, engine):
    f16 = engine.stats()
    with Engine.load(smollm2_path, max_model_len=256, max_num_seqs=64, kv_cache_dtype="float32",
                     kv_cache_memory_bytes=32 << 20, num_threads=1) as eng:
        stats = eng.stats()
        assert stats["kv_cache_bytes"] <= 32 << 20
        per_block_f32 = stats["kv_cache_bytes"] / stats["kv_blocks_total"]
        assert per_block_f32 == 2 * f16["kv_cache_bytes"] / f16["kv_blocks_total"]
        params = SamplingParams.greedy(max_tokens=6)
        assert eng.complete("The capital of France is", params).completion_tokens >= 1


def test_isa_is_process_wide(smollm2_path, engine):
    other = "neon" if platform.machine().lower() in ("x86_64", "amd64") else "avx2"
    with pytest.raises(InvalidArgumentError, match="isa"):
        Engine.load(smollm2_path, max_model_len=128, isa=other)
    # stats() names the build in use, and an engine naming it loads.
    active = engine.stats()["isa"]
    assert active in ("amx", "avx512", "avx2", "neon", "scalar")
    with Engine.load(smollm2_path, max_model_len=128, isa=active) as same:
        assert same.stats()["isa"] == active
    # The suite's engines already chose the best build: scalar is refused
    # by name unless it is what this process runs.
    try:
        eng = Engine.load(smollm2_path, max_model_len=128, isa="scalar")
    except InvalidArgumentError as exc:
        assert "process-wide" in str(exc)
    else:
        eng.close()


# -- LLM -----------------------------------------------------------------------

def test_llm_chat_template_file_and_per_call(smollm2_path, tmp_path):
    template = tmp_path / "marker.jinja"
    template.write_text(MARKER_TEMPLATE)
    with vllm_cpp.LLM(model=smollm2_path, max_model_len=256, chat_template=str(template),
                      enable_prefix_caching=False) as llm:
        out = llm.chat(HI, SamplingParams.greedy(max_tokens=3))
        assert out[0].prompt_token_ids == _chat_ids_of(llm.engine, "<<Hi>>")
        out = llm.chat(HI, SamplingParams.greedy(max_tokens=3), chat_template="[{{ messages[0].content }}]")
        assert out[0].prompt_token_ids == _chat_ids_of(llm.engine, "[Hi]")
        assert llm.engine.options["prefix_caching"] == vllm_cpp.Toggle.OFF


# -- the server ----------------------------------------------------------------

def test_server_request_template_needs_trust(engine):
    pytest.importorskip("uvicorn")
    httpx = pytest.importorskip("httpx")
    from server_harness import MODEL_NAME, running_server

    body = {"model": MODEL_NAME, "messages": HI, "max_tokens": 2, "temperature": 0,
            "chat_template": "[{{ messages[0].content }}]"}
    with running_server(engine) as url:
        for route, payload in (("/v1/chat/completions", body),
                               ("/tokenize", {"model": MODEL_NAME, "messages": HI,
                                              "chat_template": body["chat_template"]}),
                               ("/v1/chat/completions", dict(body, chat_template=None,
                                                             chat_template_kwargs={"chat_template": "x"}))):
            response = httpx.post(url + route, json=payload, timeout=60)
            assert response.status_code == 400, response.text
            assert "--trust-request-chat-template" in response.json()["error"]["message"]
    with running_server(engine, trust_request_chat_template=True) as url:
        response = httpx.post(url + "/v1/chat/completions", json=body, timeout=60)
        assert response.status_code == 200, response.text
        assert response.json()["usage"]["prompt_tokens"] == len(_chat_ids_of(engine, "[Hi]"))
        response = httpx.post(url + "/tokenize", json={"model": MODEL_NAME, "messages": HI,
                                                       "chat_template": body["chat_template"]}, timeout=60)
        assert response.json()["tokens"] == _chat_ids_of(engine, "[Hi]")
