"""The server's LoRA adapters, as vLLM serves them: ``--lora-modules``
(``name=path`` or its JSON form ``{"name": ..., "path": ...,
"base_model_name": ...}``), the adapter chosen by a request's ``model``
field, ``/v1/models`` cards with their ``parent``, and the runtime
``POST /v1/load_lora_adapter`` / ``/v1/unload_lora_adapter`` (present only
when ``VLLM_ALLOW_RUNTIME_LORA_UPDATING`` is true, as in vLLM)."""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, List, Optional, Sequence

from ..engine import Engine
from ..errors import VllmError
from ..lora import LoRARequest
from .protocol import ApiError, invalid

RUNTIME_UPDATING_ENV = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"


def runtime_updating_allowed() -> bool:
    """vLLM's flag: "1" or "true" (any case)."""
    return os.environ.get(RUNTIME_UPDATING_ENV, "").strip().lower() in ("1", "true")


def parse_lora_modules(values: Optional[Sequence[str]]) -> List[LoRARequest]:
    """``--lora-modules`` values (vLLM's syntax) as LoRARequests, ids from 1;
    ValueError naming the bad value."""
    out: List[LoRARequest] = []
    for value in values or ():
        if value.lstrip().startswith("{"):
            try:
                doc = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError("--lora-modules %r: invalid JSON (%s)" % (value, exc)) from None
            if not isinstance(doc, dict) or not isinstance(doc.get("name"), str) or not isinstance(doc.get("path"), str):
                raise ValueError("--lora-modules %r: the JSON form needs string 'name' and 'path'" % value)
            name, path, base = doc["name"], doc["path"], doc.get("base_model_name")
        else:
            name, sep, path = value.partition("=")
            if not sep or not name or not path:
                raise ValueError("--lora-modules %r: expected name=path or a JSON object" % value)
            base = None
        if any(m.lora_name == name for m in out):
            raise ValueError("--lora-modules: the name %r is given twice" % name)
        out.append(LoRARequest(name, len(out) + 1, path, base_model_name=base))
    return out


class ServedLoras:
    """The adapters a server serves by name, registered on its engine."""

    def __init__(self, engine: Engine, modules: Sequence[LoRARequest]):
        self._engine = engine
        self._by_name: Dict[str, LoRARequest] = {}
        self._lock = threading.Lock()
        for module in modules:
            engine.add_lora(module)
            self._by_name[module.lora_name] = module

    def names(self) -> List[str]:
        return list(self._by_name)

    def find(self, name: Any) -> Optional[LoRARequest]:
        return self._by_name.get(name) if isinstance(name, str) else None

    def cards(self, created: int, parent: str) -> List[Dict[str, Any]]:
        return [{"id": m.lora_name, "object": "model", "created": created, "owned_by": "vllm-cpp",
                 "root": m.path, "parent": m.base_model_name or parent, "max_model_len": None}
                for m in list(self._by_name.values())]

    def load(self, body: Dict[str, Any], served: Sequence[str]) -> str:
        """``POST /v1/load_lora_adapter``: ``lora_name`` and ``lora_path``."""
        name, path = body.get("lora_name"), body.get("lora_path")
        if not isinstance(name, str) or not name or not isinstance(path, str) or not path:
            raise invalid("both 'lora_name' and 'lora_path' must be non-empty strings")
        with self._lock:
            if name in self._by_name or name in served:
                raise ApiError(400, "The lora adapter '%s' has already been loaded." % name, param="lora_name")
            used = {m.lora_int_id for m in self._by_name.values()}
            lora = LoRARequest(name, next(i for i in range(1, len(used) + 2) if i not in used), path)
            try:
                self._engine.add_lora(lora)
            except VllmError as exc:
                raise ApiError(400, str(exc), param="lora_path") from None
            self._by_name[name] = lora
        return "Success: LoRA adapter '%s' added successfully." % name

    def unload(self, body: Dict[str, Any]) -> str:
        """``POST /v1/unload_lora_adapter``: ``lora_name``."""
        name = body.get("lora_name")
        if not isinstance(name, str) or not name:
            raise invalid("'lora_name' must be a non-empty string")
        with self._lock:
            lora = self._by_name.get(name)
            if lora is None:
                raise ApiError(404, "The lora adapter '%s' cannot be found." % name, param="lora_name",
                               code="model_not_found")
            self._engine.remove_lora(lora.lora_int_id)
            del self._by_name[name]
        return "Success: LoRA adapter '%s' removed successfully." % name
