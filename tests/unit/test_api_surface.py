"""The public Python surface (docs/python-api.md): names, value types,
validation of what the C ABI cannot carry, builder == keyword options, and
features the engine refuses by name."""

import dataclasses
import json
import os
import pathlib

import pytest

import vllm_cpp
from vllm_cpp import (
    AbiMismatchError,
    Completion,
    Engine,
    EngineBuilder,
    FinishReason,
    InteriorNulError,
    InvalidArgumentError,
    InvalidConfigurationError,
    SamplingParams,
    SchedulerPolicy,
    StreamControl,
    StreamEvent,
    StreamOutcome,
    StructuredOutput,
    Toggle,
)
from vllm_cpp._ffi import ffi
from vllm_cpp.core import native_model_params, native_sampling_params

PUBLIC_NAMES = [
    # engine and values
    "Engine", "EngineBuilder", "SamplingParams", "StructuredOutput", "Completion",
    "FinishReason", "StreamEvent", "StreamControl", "StreamOutcome", "Request",
    "RequestOutcome", "Toggle", "SchedulerPolicy",
    # errors
    "VllmError", "AbiMismatchError", "InvalidArgumentError", "ContextLengthExceededError", "ModelLoadError",
    "EngineError", "UnknownNativeError", "InvalidConfigurationError",
    "InteriorNulError", "InvalidUtf8Error", "CallbackError", "LogitsProcessorError",
    "RequestCallbackThreadError",
    # helpers
    "get_include", "get_library_path", "abi_version", "library_version", "__version__",
]

ENGINE_METHODS = [
    "load", "builder", "close", "__enter__", "__exit__", "complete", "complete_stream",
    "stream", "chat", "chat_json", "chat_stream", "chat_stream_json", "submit",
    "acomplete", "astream", "achat", "achat_stream",
]

REQUEST_METHODS = ["is_done", "cancel", "wait", "native_error", "close", "__enter__", "__exit__"]


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_public_name_importable(name):
    assert hasattr(vllm_cpp, name)
    if name != "__version__":
        assert name in vllm_cpp.__all__


def test_engine_and_request_methods_exist():
    for name in ENGINE_METHODS:
        assert callable(getattr(Engine, name)), name
    for name in REQUEST_METHODS:
        assert callable(getattr(vllm_cpp.Request, name)), name


def test_enums():
    assert [t.name for t in Toggle] == ["DEFAULT", "ON", "OFF"]
    assert [int(t) for t in Toggle] == [0, 1, 2]
    assert [p.value for p in SchedulerPolicy] == ["fcfs", "priority", "lpm"]
    assert {r.name for r in FinishReason} == {"STOP", "LENGTH", "ABORT", "ERROR", "REPETITION", "UNKNOWN"}
    assert FinishReason.STOP == "stop" and str(FinishReason.STOP) == "stop" and f"{FinishReason.LENGTH}" == "length"
    assert FinishReason.parse("length") is FinishReason.LENGTH
    assert FinishReason.parse("something_new") == "something_new"
    assert not isinstance(FinishReason.parse("something_new"), FinishReason)
    assert FinishReason.parse(None) is None
    assert {c.name for c in StreamControl} == {"CONTINUE", "STOP"}


def test_value_types_are_frozen_and_compare_by_value():
    c = Completion("x", FinishReason.STOP, 3, 1)
    assert c == Completion("x", FinishReason.STOP, 3, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.text = "y"
    assert StreamEvent("a", False) == StreamEvent("a", False)
    assert StreamOutcome(True) != StreamOutcome(False)
    p = SamplingParams()
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.temperature = 0.5


# -- SamplingParams ------------------------------------------------------------

def test_sampling_defaults_mirror_native():
    p = SamplingParams()
    assert (p.temperature, p.top_p, p.top_k, p.min_p, p.max_tokens, p.seed) == (1.0, 1.0, 0, 0.0, 16, None)
    assert (p.presence_penalty, p.frequency_penalty, p.repetition_penalty) == (0.0, 0.0, 1.0)
    assert (p.min_tokens, p.ignore_eos, p.stop, p.structured_output, p.logits_processor) == (0, False, (), None, None)
    with native_sampling_params(p) as n:
        c = n.ptr
        assert c.temperature == 1.0 and c.top_p == 1.0 and c.top_k == 0 and c.max_tokens == 16
        assert c.has_seed == 0 and c.repetition_penalty == 1.0 and c.n_stop == 0
        assert c.stop == ffi.NULL and c.logits_processor == ffi.NULL


def test_greedy_sets_temperature_zero_and_keeps_overrides():
    g = SamplingParams.greedy(max_tokens=8, stop=["\n"])
    assert g.temperature == 0.0 and g.max_tokens == 8 and g.stop == ("\n",)
    assert g == SamplingParams(temperature=0.0, max_tokens=8, stop=("\n",))


def test_max_tokens_zero_is_invalid_and_none_is_unbounded():
    with pytest.raises(InvalidConfigurationError, match="max_tokens"):
        SamplingParams(max_tokens=0)
    with pytest.raises(InvalidConfigurationError):
        SamplingParams(max_tokens=-3)
    with native_sampling_params(SamplingParams(max_tokens=None)) as n:
        assert n.ptr.max_tokens == 0


def test_seed_and_stop_reach_native_struct():
    p = SamplingParams(seed=2**64 - 1, stop=["END", "\n\n"], ignore_eos=True, min_tokens=2)
    with native_sampling_params(p) as n:
        c = n.ptr
        assert c.has_seed == 1 and c.seed == 2**64 - 1
        assert c.n_stop == 2
        assert [ffi.string(c.stop[i]) for i in range(2)] == [b"END", b"\n\n"]
        assert c.ignore_eos == 1 and c.min_tokens == 2


def test_single_stop_string_is_one_stop():
    assert SamplingParams(stop="END").stop == ("END",)


@pytest.mark.parametrize("kwargs", [
    {"max_tokens": 2**31},
    {"top_k": 2**31},
    {"top_k": -(2**31) - 1},
    {"min_tokens": -1},
    {"seed": -1},
    {"seed": 2**64},
    {"max_tokens": 1.5},
    {"max_tokens": True},
    {"temperature": "hot"},
    {"top_p": None},
    {"stop": 5},
    {"stop": ["ok", 3]},
    {"structured_output": "json"},
    {"logits_processor": 42},
    {"logits_processor": lambda ids, logits: None, "max_tokens": None},
])
def test_values_the_abi_cannot_carry_are_invalid_configuration(kwargs):
    with pytest.raises(InvalidConfigurationError):
        SamplingParams(**kwargs)


def test_invalid_configuration_is_a_value_error():
    with pytest.raises(ValueError):
        SamplingParams(max_tokens=0)


def test_nul_in_stop_names_the_field():
    with pytest.raises(InteriorNulError) as info:
        SamplingParams(stop=["a\0b"])
    assert info.value.field == "stop"


def test_structured_output_constructors():
    assert StructuredOutput.json_schema({"type": "object"}).value == json.dumps({"type": "object"})
    assert StructuredOutput.json_schema('{"type": "string"}').kind == "json_schema"
    assert StructuredOutput.regex("[0-9]+").value == "[0-9]+"
    assert StructuredOutput.choice(["a", "b"]).value == ("a", "b")
    assert StructuredOutput.grammar('root ::= "x"').kind == "grammar"
    assert StructuredOutput.json_object().value is None
    with pytest.raises(InvalidConfigurationError):
        StructuredOutput.choice([])
    with pytest.raises(InvalidConfigurationError):
        StructuredOutput.regex(5)
    with pytest.raises(InteriorNulError):
        StructuredOutput.regex("a\0")


@pytest.mark.parametrize("so, field, expect", [
    (StructuredOutput.json_schema({"type": "object"}), "structured_json", b'{"type": "object"}'),
    (StructuredOutput.regex("[a-z]+"), "structured_regex", b"[a-z]+"),
    (StructuredOutput.grammar('root ::= "x"'), "structured_grammar", b'root ::= "x"'),
])
def test_structured_output_reaches_native_struct(so, field, expect):
    with native_sampling_params(SamplingParams(structured_output=so)) as n:
        assert ffi.string(getattr(n.ptr, field)) == expect


def test_structured_choice_and_json_object_reach_native_struct():
    with native_sampling_params(SamplingParams(structured_output=StructuredOutput.choice(["yes", "no"]))) as n:
        assert n.ptr.n_structured_choice == 2
        assert ffi.string(n.ptr.structured_choice[1]) == b"no"
    with native_sampling_params(SamplingParams(structured_output=StructuredOutput.json_object())) as n:
        assert n.ptr.structured_json_object == 1


def test_logits_processor_passes_trampoline_and_handle():
    p = SamplingParams(max_tokens=4, logits_processor=lambda ids, logits: None)
    with native_sampling_params(p) as n:
        assert n.ptr.logits_processor != ffi.NULL
        assert n.ptr.logits_processor_user_data != ffi.NULL


# -- engine options ----------------------------------------------------------

FULL_OPTIONS = dict(
    tokenizer_config_path="/x/tokenizer_config.json",
    block_size=16,
    num_blocks=64,
    max_model_len=256,
    max_num_seqs=2,
    tool_parser="hermes",
    reasoning_parser="none",
    speculative_config={"method": "ngram", "num_speculative_tokens": 3},
    prefix_caching=Toggle.OFF,
    max_num_batched_tokens=256,
    scheduler=SchedulerPolicy.PRIORITY,
    kv_transfer_config='{"kv_connector": "x", "kv_role": "kv_both"}',
    jump_forward=Toggle.ON,
)


def _builder_with(path, options):
    b = Engine.builder(path)
    for name, value in options.items():
        b = getattr(b, name)(value)
    assert isinstance(b, EngineBuilder)
    return b


def _struct_fields(p):
    """vllm_model_params as a dict (strings as bytes, NULL as None)."""
    out = {}
    for name, fld in ffi.typeof("vllm_model_params").fields:
        value = getattr(p, name)
        if fld.type.kind == "pointer":
            value = None if value == ffi.NULL else ffi.string(value)
        out[name] = value
    return out


def test_builder_and_keyword_forms_produce_the_same_native_params():
    b = _builder_with("model.gguf", FULL_OPTIONS)
    assert b.options == vllm_cpp.core._normalize_options(FULL_OPTIONS)
    kw, keep1 = native_model_params("model.gguf", vllm_cpp.core._normalize_options(FULL_OPTIONS))
    bu, keep2 = native_model_params(b.model_path, b.options)
    assert _struct_fields(kw[0]) == _struct_fields(bu[0])
    fields = _struct_fields(kw[0])
    assert fields["model_path"] == b"model.gguf"
    assert fields["num_blocks"] == 64 and fields["max_model_len"] == 256
    assert fields["enable_prefix_caching"] == 2 and fields["enable_jump_forward"] == 1
    assert fields["scheduling_policy"] == b"priority"
    assert json.loads(fields["speculative_config"]) == FULL_OPTIONS["speculative_config"]


def test_unset_options_are_native_defaults():
    p, _keep = native_model_params(pathlib.Path("m.gguf"), {})
    fields = _struct_fields(p[0])
    assert fields.pop("model_path") == b"m.gguf"
    assert all(v in (None, 0) for v in fields.values()), fields


@pytest.mark.timeout(300)
def test_builder_and_keyword_engines_agree(smollm2_path):
    opts = dict(num_blocks=64, max_model_len=256, max_num_seqs=2, max_num_batched_tokens=256)
    params = SamplingParams.greedy(max_tokens=6)
    with Engine.load(smollm2_path, **opts) as a:
        ta = a.complete("The capital of France is", params)
        assert a.options == opts
    with _builder_with(smollm2_path, opts).load() as b:
        tb = b.complete("The capital of France is", params)
        assert b.options == opts
    assert ta == tb


def test_unknown_keyword_is_type_error():
    with pytest.raises(TypeError):
        Engine.load("model.gguf", num_blokcs=3)
    with pytest.raises(AttributeError):
        Engine.builder("model.gguf").num_blokcs(3)


@pytest.mark.parametrize("options", [
    {"num_blocks": 2**31},
    {"max_model_len": -(2**31) - 1},
    {"max_num_seqs": "2"},
    {"block_size": 16.0},
    {"max_num_batched_tokens": True},
    {"prefix_caching": 5},
    {"jump_forward": "sometimes"},
    {"scheduler": 1},
    {"speculative_config": ["ngram"]},
    {"kv_transfer_config": {"bad": object()}},
    {"tool_parser": 3},
    {"tokenizer_config_path": 3},
])
def test_options_the_abi_cannot_carry_are_invalid_configuration(options):
    with pytest.raises(InvalidConfigurationError):
        Engine.load("does-not-matter.gguf", **options)
    with pytest.raises(InvalidConfigurationError):
        _builder_with("does-not-matter.gguf", options).load()


def test_model_path_types():
    with pytest.raises(InvalidConfigurationError):
        Engine.load(42)
    with pytest.raises(InteriorNulError) as info:
        Engine.load("model\0.gguf")
    assert info.value.field == "model_path"


def test_unknown_scheduler_name_is_the_engines_to_refuse(smollm2_path):
    with pytest.raises(InvalidArgumentError, match="(?i)sched|polic|lifo"):
        Engine.load(smollm2_path, scheduler="lifo")


def test_abi_version_is_checked_first(monkeypatch):
    assert vllm_cpp.abi_version() == 10
    assert vllm_cpp.ABI_VERSION == 10
    monkeypatch.setattr(vllm_cpp._ffi, "native_abi_version", lambda: 9)
    with pytest.raises(AbiMismatchError) as info:
        Engine.load(42, num_blocks=2**40)  # would be invalid, but the ABI comes first
    assert (info.value.expected, info.value.actual) == (10, 9)


def test_library_reports_abi_10_and_a_version():
    assert vllm_cpp.abi_version() == 10
    assert vllm_cpp.library_version()


def test_get_include_and_get_library_path():
    inc = vllm_cpp.get_include()
    assert os.path.isfile(os.path.join(inc, "vllm.h"))
    with open(os.path.join(inc, "vllm.h"), encoding="utf-8") as f:
        assert "#define VLLM_ABI_VERSION 10" in f.read()
    lib = vllm_cpp.get_library_path()
    assert os.path.isfile(lib) and os.path.basename(lib).startswith("libvllm")
    # the extension sits next to the library it links
    assert os.path.dirname(lib) == os.path.dirname(vllm_cpp._ffi.__file__)


# -- features the engine refuses by name (for now) ----------------------------

def test_engine_usable_after_refusals(engine):
    out = engine.complete("The capital of France is", SamplingParams.greedy(max_tokens=4))
    assert out.text and out.completion_tokens >= 1
