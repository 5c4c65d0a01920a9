"""``GET /tokenizer_info``: vLLM's tokenizer description, what
lm-evaluation-harness's ``remote`` tokenizer backend reads (``eos_token``,
``bos_token``, ``pad_token``, ``chat_template``; it then asks ``/tokenize``
for their ids).

vLLM answers with the tokenizer's ``tokenizer_config.json`` settings plus
``tokenizer_class`` and the server's ``--chat-template``. The C ABI has no
call for the tokenizer's settings, but the engine's chat templates see its
special tokens as ``bos_token`` and ``eos_token``: a template that is just
``{{ eos_token }}``, tokenized by the engine's chat call, gives the token's
ids, and detokenizing them its text. So the answer comes from the engine's
own tokenizer, with no second reader of the model file. Left out, for want
of a way to read them: the pad and unknown tokens (null) and the vocabulary.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..engine import Engine


def _special_token(engine: Engine, name: str) -> Tuple[Optional[str], Optional[int]]:
    """(text, id) of the template variable ``name`` (``bos_token`` or
    ``eos_token``); (None, None) when the tokenizer has none."""
    ids: List[int] = engine.tokenize_chat({"messages": [{"role": "user", "content": ""}],
                                           "chat_template": "{{ %s }}" % name})
    if not ids:
        return None, None
    return engine.detokenize(ids, skip_special_tokens=False), ids[0] if len(ids) == 1 else None


def tokenizer_info(engine: Engine, max_model_len: Optional[int]) -> Dict[str, Any]:
    """The response body (computed per call: a few tokenizer calls)."""
    bos_token, bos_token_id = _special_token(engine, "bos_token")
    eos_token, eos_token_id = _special_token(engine, "eos_token")
    probe = engine.tokenize("a", add_special_tokens=False)
    with_special = engine.tokenize("a", add_special_tokens=True)
    info: Dict[str, Any] = {
        "tokenizer_class": "vllm_cpp.Engine",
        "bos_token": bos_token, "eos_token": eos_token, "pad_token": None, "unk_token": None,
        "bos_token_id": bos_token_id, "eos_token_id": eos_token_id,
        "add_bos_token": bos_token_id is not None and with_special[:1] == [bos_token_id] != probe[:1],
        "add_eos_token": eos_token_id is not None and with_special[-1:] == [eos_token_id] != probe[-1:],
        "model_max_length": max_model_len,
    }
    template = engine.options.get("chat_template")
    if template:  # as vLLM: the server's --chat-template, when given
        info["chat_template"] = template
    return info
