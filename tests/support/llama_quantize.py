"""GGUF files in llama.cpp's file types, made by llama.cpp's own quantizer.

``quantized(source, ftype)`` runs ``llama_cpp.llama_model_quantize`` (from
llama-cpp-python, not a test requirement: callers skip or refuse without it)
on ``source`` with ``allow_requantize``, so every type can be made from the
bundled Q4_1 SmolLM2 (a K-quant mix, Q8_0, BF16, F16, ...), and caches the
result under ``~/.cache/vllm-cpp-test/quant-mixes`` (``$VLLM_CPP_TEST_CACHE``
replaces ``~/.cache/vllm-cpp-test``), keyed by the source's name, the type
and the llama-cpp-python version. tests/models/test_quant_mixes.py and
bench/bench_formats.py share it.
"""

from __future__ import annotations

import ctypes
import os
import pathlib


def cache_dir() -> pathlib.Path:
    root = pathlib.Path(os.environ.get("VLLM_CPP_TEST_CACHE", "~/.cache/vllm-cpp-test")).expanduser()
    path = root / "quant-mixes"
    path.mkdir(parents=True, exist_ok=True)
    return path


def quantized(source, ftype: str, pure: bool = False) -> pathlib.Path:
    """``source`` in llama.cpp's ``LLAMA_FTYPE_MOSTLY_<ftype>`` mix (every
    tensor in that type where it fits when ``pure``), made once and cached."""
    import llama_cpp

    name = f"{pathlib.Path(source).stem}-{ftype}{'-pure' if pure else ''}-llama_cpp-{llama_cpp.__version__}.gguf"
    out = cache_dir() / name
    if out.exists():
        return out
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype}")
    params.allow_requantize = True
    params.pure = pure
    params.nthread = os.cpu_count() or 2
    partial = out.with_suffix(".part")
    status = llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), ctypes.byref(params))
    if status != 0:
        raise RuntimeError(f"llama_model_quantize to {ftype} failed (status {status})")
    partial.replace(out)  # whole files only: an interrupted run leaves no bad cache entry
    return out
