"""LoRA adapters as vLLM names them: :class:`LoRARequest` (``vllm.lora.request``'s
``LoRARequest(lora_name, lora_int_id, lora_path)``), and how a request names
its adapter to the engine (the ``lora_int_id`` request field, registered on
the engine through ``vllm_lora_adapter_add`` first)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, Optional, Union

from .errors import InvalidConfigurationError
from .sampling_params import SamplingParams

__all__ = ["LoRARequest", "with_lora", "lora_fields"]


@dataclasses.dataclass(frozen=True)
class LoRARequest:
    """A LoRA adapter for a request: its name, a unique positive id and its
    Hugging Face PEFT directory (adapter_config.json and
    adapter_model.safetensors). The engine registers it the first time a
    request names it (or through :meth:`Engine.add_lora`)."""

    lora_name: str
    lora_int_id: int
    lora_path: Union[str, "os.PathLike[str]"] = ""
    base_model_name: Optional[str] = None

    def __post_init__(self):
        if not isinstance(self.lora_name, str) or not self.lora_name:
            raise InvalidConfigurationError("LoRARequest.lora_name must be a non-empty str")
        if isinstance(self.lora_int_id, bool) or not isinstance(self.lora_int_id, int) or self.lora_int_id < 1:
            raise InvalidConfigurationError("LoRARequest.lora_int_id must be an int >= 1 (got %r)" % (self.lora_int_id,))

    # vLLM's property names.
    @property
    def adapter_id(self) -> int:
        return self.lora_int_id

    @property
    def name(self) -> str:
        return self.lora_name

    @property
    def path(self) -> str:
        return os.fspath(self.lora_path)


def lora_fields(lora_request: Optional[LoRARequest]) -> Dict[str, Any]:
    """The request field that names the adapter ({} for the base model)."""
    if lora_request is None:
        return {}
    if not isinstance(lora_request, LoRARequest):
        raise InvalidConfigurationError("lora_request must be a LoRARequest, not %s" % type(lora_request).__name__)
    return {"lora_int_id": lora_request.lora_int_id}


def with_lora(params: SamplingParams, lora_request: Optional[LoRARequest]) -> SamplingParams:
    """``params`` naming ``lora_request``'s adapter (unchanged for None)."""
    fields = lora_fields(lora_request)
    if not fields:
        return params
    return dataclasses.replace(params, request_fields={**(params.request_fields or {}), **fields})
