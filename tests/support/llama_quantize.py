"""GGUF files in llama.cpp's file types, made by llama.cpp's own quantizer.

``quantized(source, ftype)`` runs ``llama_cpp.llama_model_quantize`` (from
llama-cpp-python, not a test requirement: callers skip or refuse without it)
on ``source`` with ``allow_requantize``, so every type can be made from the
bundled Q4_1 SmolLM2 (a K-quant mix, Q8_0, BF16, F16, ...), and caches the
result under ``~/.cache/vllm-cpp-test/quant-mixes`` (``$VLLM_CPP_TEST_CACHE``
replaces ``~/.cache/vllm-cpp-test``), keyed by the source's name, the type
and the llama-cpp-python version. tests/models/test_quant_mixes.py and
bench/bench_formats.py share it.

The IQ1/IQ2/IQ3_XXS types need an importance matrix (the quantizer refuses
them without one): ``imatrix=True`` hands it a uniform one (every column
weighted 1, the neutral choice), built in memory from the source's tensor
shapes as the ``llama_model_imatrix_data`` array this llama.cpp's
``llama_model_quantize_params.imatrix`` takes (no imatrix file is involved).
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


def _uniform_imatrix(source):
    """A uniform importance matrix for every matrix of ``source``: a ctypes
    array of llama_model_imatrix_data ending in a null name, and the
    buffers it points into (keep them alive while it is used)."""
    import gguf
    import llama_cpp

    entries, keep = [], []
    for t in gguf.GGUFReader(str(source)).tensors:
        shape = [int(n) for n in t.shape]  # ne0 first
        if len(shape) < 2:
            continue
        size = shape[0] * (shape[2] if len(shape) > 2 else 1)  # columns, per expert
        name = t.name.encode()
        weights = (ctypes.c_float * size)(*([1.0] * size))
        keep += [name, weights]
        entries.append((name, ctypes.cast(weights, ctypes.POINTER(ctypes.c_float)), size))
    array = (llama_cpp.llama_model_imatrix_data * (len(entries) + 1))()
    for slot, (name, data, size) in zip(array, entries):
        slot.name, slot.data, slot.size = name, data, size
    return array, keep


def quantized(source, ftype: str, pure: bool = False, imatrix: bool = False) -> pathlib.Path:
    """``source`` in llama.cpp's ``LLAMA_FTYPE_MOSTLY_<ftype>`` mix (every
    tensor in that type where it fits when ``pure``; with a uniform
    importance matrix when ``imatrix``), made once and cached."""
    import llama_cpp

    suffix = ("-pure" if pure else "") + ("-imatrix" if imatrix else "")
    name = f"{pathlib.Path(source).stem}-{ftype}{suffix}-llama_cpp-{llama_cpp.__version__}.gguf"
    out = cache_dir() / name
    if out.exists():
        return out
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype}")
    params.allow_requantize = True
    params.pure = pure
    params.nthread = os.cpu_count() or 2
    if imatrix:
        array, _keep = _uniform_imatrix(source)
        params.imatrix = array
    partial = out.with_suffix(".part")
    status = llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), ctypes.byref(params))
    if status != 0:
        raise RuntimeError(f"llama_model_quantize to {ftype} failed (status {status})")
    partial.replace(out)  # whole files only: an interrupted run leaves no bad cache entry
    return out
