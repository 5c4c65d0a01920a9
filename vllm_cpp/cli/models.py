"""``vllm-cpp models``: the bundled models' short names, whether each is
installed, and where (or the command that installs it)."""

from __future__ import annotations

from ..models import BUNDLED_MODELS


def run_models() -> int:
    for model in BUNDLED_MODELS.values():
        if model.installed():
            try:
                where = model.find()
            except (FileNotFoundError, OSError) as exc:
                where = "broken install (%s)" % exc
        else:
            where = "not installed: %s" % model.install
        print("%-12s %s\n%-12s %s" % (model.name, model.description, "", where))
    return 0
