"""Where the fixtures beside the project are, for tests/conftest.py and for
modules under a folder whose own conftest.py shadows the name ``conftest``
(tests/serving/)."""

import os
import pathlib

from native_build import ROOT as SOURCE_ROOT

#: Fixtures that live beside the project, at ../shared relative to the
#: repository root (never an absolute path of one machine); for a copy of
#: tests/ outside the checkout, beside the checkout it names (native_build).
SHARED_DIR = SOURCE_ROOT.parent / "shared"
#: The chat-template fixtures; $VLLM_CPP_CHAT_TEMPLATES points elsewhere.
CHAT_TEMPLATES_DIR = pathlib.Path(os.environ.get("VLLM_CPP_CHAT_TEMPLATES", SHARED_DIR / "fixtures" / "chat_templates"))
