"""Errors: the hierarchy, native statuses mapped with their messages, bad
model files, NUL / UTF-8 handling, callback exceptions; the engine stays
usable after each."""

import os
import struct
import pickle

import pytest

import vllm_cpp
from vllm_cpp import (
    ContextLengthExceededError,
    AbiMismatchError,
    CallbackError,
    Engine,
    EngineError,
    InteriorNulError,
    InvalidArgumentError,
    InvalidConfigurationError,
    InvalidUtf8Error,
    LogitsProcessorError,
    ModelLoadError,
    RequestCallbackThreadError,
    SamplingParams,
    StreamControl,
    UnknownNativeError,
    VllmError,
)
from vllm_cpp._ffi import decode_bytes, encode_str
from vllm_cpp.errors import error_for_status

pytestmark = pytest.mark.timeout(300)


def assert_usable(engine):
    out = engine.complete("The capital of France is", SamplingParams.greedy(max_tokens=3))
    assert out.completion_tokens >= 1 and out.text


# -- the hierarchy -------------------------------------------------------------

@pytest.mark.parametrize("cls", [
    AbiMismatchError, InvalidArgumentError, ModelLoadError, EngineError, UnknownNativeError,
    InvalidConfigurationError, InteriorNulError, InvalidUtf8Error, CallbackError,
    LogitsProcessorError, RequestCallbackThreadError,
])
def test_every_error_is_a_vllm_error(cls):
    assert issubclass(cls, VllmError)
    assert issubclass(VllmError, Exception)


def test_caller_errors_are_value_errors():
    for cls in (InvalidArgumentError, InvalidConfigurationError, InteriorNulError):
        assert issubclass(cls, ValueError)
    for cls in (ModelLoadError, EngineError, UnknownNativeError, AbiMismatchError):
        assert not issubclass(cls, ValueError)


@pytest.mark.parametrize("status, cls", [
    (1, InvalidArgumentError), (2, ModelLoadError), (3, EngineError), (4, UnknownNativeError),
    (99, UnknownNativeError),
])
def test_status_mapping_keeps_the_native_message(status, cls):
    err = error_for_status(status, "native says why")
    assert type(err) is cls
    assert "native says why" in str(err)
    assert err.status == status


def test_errors_pickle():
    for err in (AbiMismatchError(10, 9), InteriorNulError("prompt"), ModelLoadError("m", status=2),
                InvalidUtf8Error("text", b"\xff")):
        copy = pickle.loads(pickle.dumps(err))
        assert type(copy) is type(err) and str(copy) == str(err)
    assert pickle.loads(pickle.dumps(AbiMismatchError(10, 9))).actual == 9


def test_abi_mismatch_carries_both_versions():
    err = AbiMismatchError(10, 11)
    assert (err.expected, err.actual) == (10, 11)
    assert "10" in str(err) and "11" in str(err)


# -- strings across the boundary ------------------------------------------------

def test_encode_rejects_nul_naming_the_field():
    with pytest.raises(InteriorNulError) as info:
        encode_str("a\0b", "prompt")
    assert info.value.field == "prompt" and "prompt" in str(info.value)


def test_encode_rejects_unencodable_and_wrong_types():
    with pytest.raises(InvalidConfigurationError):
        encode_str("\udcff", "prompt")
    with pytest.raises(InvalidConfigurationError):
        encode_str(b"bytes", "prompt")


def test_decode_invalid_utf8_names_the_field():
    assert decode_bytes("é".encode(), "text") == "é"
    with pytest.raises(InvalidUtf8Error) as info:
        decode_bytes(b"ok \xff\xfe", "text")
    assert info.value.field == "text" and info.value.data == b"ok \xff\xfe"
    assert "text" in str(info.value)


# -- bad model files ---------------------------------------------------------

def _load_fails(path, engine):
    with pytest.raises(ModelLoadError) as info:
        Engine.load(path)
    assert str(path) in str(info.value), str(info.value)
    assert info.value.message
    assert_usable(engine)
    return info.value


def test_missing_file(engine, tmp_path):
    _load_fails(tmp_path / "no-such-model.gguf", engine)


def test_directory_without_model_files(engine, tmp_path):
    _load_fails(tmp_path, engine)


def test_random_bytes_named_gguf(engine, tmp_path):
    path = tmp_path / "random.gguf"
    path.write_bytes(os.urandom(4096))
    _load_fails(path, engine)


def test_truncated_gguf(engine, tmp_path, smollm2_path):
    path = tmp_path / "truncated.gguf"
    with open(smollm2_path, "rb") as f:
        path.write_bytes(f.read(1 << 20))
    _load_fails(path, engine)


def test_fifo_is_refused_without_blocking(engine, tmp_path):
    # Opening a FIFO for reading waits for a writer; the loader must refuse
    # anything but a regular file before reading it.
    path = tmp_path / "model.gguf"
    os.mkfifo(path)
    assert "not a regular file" in str(_load_fails(path, engine))


def test_control_bytes_in_a_gguf_key_are_escaped(engine, tmp_path):
    # A key holding a NUL used to cut the error text before its reason.
    key = b"bad\0key"
    header = struct.pack("<IIQQ", 0x46554747, 3, 0, 1) + struct.pack("<Q", len(key)) + key + struct.pack("<I", 99)
    path = tmp_path / "nul-key.gguf"
    path.write_bytes(header + bytes(64))
    message = str(_load_fails(path, engine))
    assert "bad\\x00key" in message and "unknown value type 99" in message, message


def test_empty_file(engine, tmp_path):
    path = tmp_path / "empty.gguf"
    path.write_bytes(b"")
    _load_fails(path, engine)


# -- caller errors on a live engine ------------------------------------------

def test_nul_in_prompt(engine):
    for call in (
        lambda: engine.complete("bad\0prompt", SamplingParams.greedy(max_tokens=2)),
        lambda: engine.complete_stream("bad\0prompt", SamplingParams.greedy(max_tokens=2), lambda e: None),
        lambda: engine.stream("bad\0prompt"),
    ):
        with pytest.raises(InteriorNulError) as info:
            call()
        assert info.value.field == "prompt"
    assert_usable(engine)


def test_out_of_range_value_is_refused_by_the_engine(engine):
    with pytest.raises(InvalidArgumentError) as info:
        engine.complete("Hi", SamplingParams(top_p=1.5, max_tokens=2))
    assert info.value.message and info.value.status == 1
    with pytest.raises(InvalidArgumentError):
        engine.complete("Hi", SamplingParams(repetition_penalty=0.0, max_tokens=2))
    assert_usable(engine)


@pytest.mark.parametrize("overrides, field", [
    ({"repetition_penalty": 0.0}, "repetition_penalty"),
    ({"repetition_penalty": -1.0}, "repetition_penalty"),
    ({"top_p": 0.0}, "top_p"),
    ({"top_p": 1.01}, "top_p"),
    ({"min_p": -0.01}, "min_p"),
    ({"min_p": 1.5}, "min_p"),
    ({"top_k": -2}, "top_k"),
    ({"temperature": -1.0}, "temperature"),
    ({"min_tokens": 5, "max_tokens": 2}, "min_tokens"),
    ({"stop": ("",)}, "stop"),
])
def test_sampling_values_out_of_range_name_the_field(engine, overrides, field):
    params = SamplingParams(**{"max_tokens": 2, **overrides})
    with pytest.raises(InvalidArgumentError) as info:
        engine.complete("Hi", params)
    assert field in str(info.value)
    assert_usable(engine)


def test_empty_prompt_is_refused(engine):
    with pytest.raises(InvalidArgumentError, match="empty"):
        engine.complete("", SamplingParams.greedy(max_tokens=2))
    assert_usable(engine)


def test_prompt_longer_than_max_model_len_is_refused(engine):
    with pytest.raises(ContextLengthExceededError, match="maximum context length"):
        engine.complete(" cat" * 2000, SamplingParams.greedy(max_tokens=2))
    assert_usable(engine)


def test_wrong_params_type(engine):
    with pytest.raises(InvalidConfigurationError):
        engine.complete("Hi", {"max_tokens": 2})
    assert_usable(engine)


# -- callbacks -------------------------------------------------------------

class Boom(Exception):
    pass


def test_callback_exception_is_reraised_unchanged(engine):
    raised = Boom("from the callback")
    seen = []

    def on_event(event):
        seen.append(event)
        if len(seen) == 2:
            raise raised

    with pytest.raises(Boom) as info:
        engine.complete_stream("Once upon a time", SamplingParams.greedy(max_tokens=20, ignore_eos=True), on_event)
    assert info.value is raised
    assert len(seen) == 2  # aborted natively: no further calls
    assert len(vllm_cpp._ffi.handles) == 0
    assert_usable(engine)


def test_callback_base_exception_is_reraised(engine):
    def on_event(event):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        engine.complete_stream("Hi", SamplingParams.greedy(max_tokens=5), on_event)
    assert_usable(engine)


def test_callback_bad_return_value_is_type_error(engine):
    with pytest.raises(TypeError, match="StreamControl"):
        engine.complete_stream("Hi", SamplingParams.greedy(max_tokens=5), lambda e: "yes")
    assert_usable(engine)


def test_stream_returns_and_continue_values(engine):
    for value in (None, True, StreamControl.CONTINUE):
        events = []

        def on_event(event, value=value):
            events.append(event)
            return value

        outcome = engine.complete_stream("Hi", SamplingParams.greedy(max_tokens=3, ignore_eos=True), on_event)
        assert not outcome.stopped_by_callback
        assert events[-1].finished
    outcome = engine.complete_stream("Hi", SamplingParams.greedy(max_tokens=8, ignore_eos=True), lambda e: False)
    assert outcome.stopped_by_callback


def test_generator_error_surfaces_from_next(engine):
    gen = engine.stream("Hi", SamplingParams(top_p=2.0, max_tokens=3))
    with pytest.raises(InvalidArgumentError):
        next(gen)
    assert_usable(engine)


# -- lifetime ----------------------------------------------------------------

@pytest.mark.timeout(300)
def test_closed_engine_refuses_calls(smollm2_path):
    eng = Engine.load(smollm2_path, max_model_len=128)
    eng.close()
    eng.close()  # idempotent
    assert eng.closed
    with pytest.raises(EngineError, match="closed"):
        eng.complete("Hi", SamplingParams.greedy(max_tokens=2))


@pytest.mark.timeout(300)
def test_engine_finalizer_runs_without_close(smollm2_path):
    import gc

    eng = Engine.load(smollm2_path, max_model_len=128)
    assert eng.complete("Hi", SamplingParams.greedy(max_tokens=2)).completion_tokens >= 1
    del eng
    gc.collect()
