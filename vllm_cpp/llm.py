"""``vllm_cpp.LLM``: vLLM's offline inference API over :class:`Engine`.

    from vllm_cpp import LLM, SamplingParams
    llm = LLM(model="model.gguf", max_model_len=512)
    for output in llm.generate(["Hello, my name is"], SamplingParams(max_tokens=16)):
        print(output.prompt, output.outputs[0].text)

A batch is submitted at once (pull requests read together on the calling
thread, as ``Engine.complete`` reads one), so the engine batches it, and the outputs come back in input order, shaped
like vLLM's ``RequestOutput`` / ``CompletionOutput``. Engine options use
vLLM's keyword names (``enable_prefix_caching``, ``scheduling_policy``,
``tool_call_parser``, ...). ``SamplingParams.n`` samples n sequences per
prompt, as vLLM does: ``generate`` submits one engine request per sequence
(``SamplingParams.for_choice``: a seeded sequence i samples with seed + i;
the prefix cache shares the prompt), ``chat`` passes ``n`` to the engine's
chat call (at most 128 there). ``chat`` outputs carry the prompt ids, the
assistant text, its token ids (the chat call's ``return_token_ids``) and
finish reason, but not the prompt text (the engine's chat call returns
OpenAI JSON). Logprobs are vLLM's shape: per position a ``dict`` from token
id to :class:`Logprob` holding the chosen token and its alternatives (the
native ``Engine`` API keeps its ``TokenLogprob`` objects).
"""

from __future__ import annotations

import functools
import itertools
import json
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .chat_template import FALLBACK_WARNING, load_chat_template, uses_plain_fallback
from .engine import Engine
from .engine_options import engine_options_from_vllm_names
from .lora import LoRARequest
from .outputs import Completion, TokenLogprob
from .pooling import EmbeddingOutput, EmbeddingRequestOutput, PoolingParams, ScoringOutput, ScoringRequestOutput
from .pooling import ClassificationOutput, ClassificationRequestOutput, PoolingOutput, PoolingRequestOutput
from .sampling_params import SamplingParams, StructuredOutput
from .errors import InvalidConfigurationError

__all__ = ["LLM", "RequestOutput", "CompletionOutput", "Logprob", "PositionLogprobs"]

PromptInput = Union[str, Sequence[int], Dict[str, Any]]
Conversation = List[Dict[str, Any]]


@dataclass(frozen=True)
class Logprob:
    """One token's log-probability at one position, as vLLM's ``Logprob``:
    ``rank`` is how many tokens are at least as likely (1: the most likely),
    ``decoded_token`` the token's text."""

    logprob: float
    rank: Optional[int] = None
    decoded_token: Optional[str] = None


#: One position's logprobs, as vLLM gives them: token id -> Logprob, the
#: chosen token first, then its most likely alternatives.
PositionLogprobs = Dict[int, Logprob]


def vllm_logprobs(entry: TokenLogprob) -> PositionLogprobs:
    """A native TokenLogprob (the chosen token and its alternatives) as
    vLLM's per-position dict. The alternatives come most likely first, so
    their rank is their place in that list; the chosen token's rank is the
    engine's, or its place among the alternatives when the engine gave none."""
    ranks = {alt.token_id: place for place, alt in enumerate(entry.top_logprobs, 1)}
    chosen_rank = entry.rank if entry.rank is not None else ranks.get(entry.token_id)
    position = {entry.token_id: Logprob(entry.logprob, chosen_rank, entry.token)}
    for alt in entry.top_logprobs:
        position.setdefault(alt.token_id, Logprob(alt.logprob, ranks[alt.token_id], alt.token))
    return position


def _vllm_sequence(entries):
    return None if entries is None else [None if e is None else vllm_logprobs(e) for e in entries]


@dataclass(frozen=True)
class CompletionOutput:
    """One generated sequence, as vLLM's ``CompletionOutput``; ``logprobs``
    (with ``SamplingParams.logprobs``) has one :data:`PositionLogprobs` per
    generated token."""

    index: int
    text: str
    token_ids: Tuple[int, ...]
    cumulative_logprob: Optional[float]
    logprobs: Optional[List[PositionLogprobs]]
    finish_reason: Optional[str]

    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass(frozen=True)
class RequestOutput:
    """The output of one prompt, as vLLM's ``RequestOutput``."""

    request_id: str
    prompt: Optional[str]
    prompt_token_ids: Optional[List[int]]
    outputs: List[CompletionOutput]
    finished: bool = True
    # With SamplingParams.prompt_logprobs: one entry per prompt token (None
    # first), each a PositionLogprobs, as vLLM's.
    prompt_logprobs: Optional[List[Optional[PositionLogprobs]]] = None


def _prompt(value: PromptInput) -> Tuple[Union[str, List[int]], Optional[str]]:
    """(what to submit, the prompt text when given as text)."""
    if isinstance(value, dict):
        if "prompt_token_ids" in value:
            return list(value["prompt_token_ids"]), None
        if "prompt" in value:
            return value["prompt"], value["prompt"]
        raise InvalidConfigurationError("a prompt dict needs 'prompt' or 'prompt_token_ids'")
    if isinstance(value, str):
        return value, value
    return list(value), None


def _per_prompt(params: Union[SamplingParams, Sequence[SamplingParams], None], n: int) -> List[SamplingParams]:
    if params is None:
        return [SamplingParams()] * n
    if isinstance(params, SamplingParams):
        return [params] * n
    params = list(params)
    if len(params) != n:
        raise InvalidConfigurationError("%d sampling params for %d prompts" % (len(params), n))
    return params


def _chat_fields(params: SamplingParams) -> Dict[str, Any]:
    """``params`` as OpenAI chat request fields."""
    if params.logits_processor is not None:
        raise InvalidConfigurationError("LLM.chat: logits processors are not supported in chat requests")
    fields: Dict[str, Any] = {
        "temperature": params.temperature, "top_p": params.top_p, "top_k": params.top_k,
        "min_p": params.min_p, "presence_penalty": params.presence_penalty,
        "frequency_penalty": params.frequency_penalty, "repetition_penalty": params.repetition_penalty,
        "min_tokens": params.min_tokens, "ignore_eos": params.ignore_eos, "stop": list(params.stop),
    }
    if params.max_tokens is not None:
        fields["max_tokens"] = params.max_tokens
    if params.seed is not None:
        fields["seed"] = params.seed
    if params.n != 1:
        fields["n"] = params.n
    fields.update(params.request_options())
    if params.logprobs is not None:
        # vLLM's return_tokens_as_token_ids: the entries name their token ids.
        fields.update(logprobs=True, top_logprobs=params.logprobs, return_tokens_as_token_ids=True)
    so: Optional[StructuredOutput] = params.structured_output
    if so is not None:
        key = {"json_schema": "json", "json_object": "json_object"}.get(so.kind, so.kind)
        value = True if so.kind == "json_object" else list(so.value) if so.kind == "choice" else so.value
        fields["structured_outputs"] = {key: value}
    return fields


class LLM:
    """An engine with vLLM's offline API. Extra keyword arguments are
    ``Engine.load`` options (vLLM's names accepted); ``chat_template`` is a
    file or the template text, as ``vllm serve --chat-template`` takes it.
    Use as a context manager or call ``close()`` to free the engine early."""

    def __init__(self, model: str, **engine_options: Any):
        options = engine_options_from_vllm_names(engine_options)
        if options.get("chat_template") is not None:
            options["chat_template"] = load_chat_template(options["chat_template"])
        self.engine = Engine.load(model, **options)
        self._ids = itertools.count()
        self._fallback_checked = False

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> "LLM":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def get_tokenizer(self) -> "_Tokenizer":
        return _Tokenizer(self.engine)

    def generate(self, prompts: Union[PromptInput, Sequence[PromptInput]],
                 sampling_params: Union[SamplingParams, Sequence[SamplingParams], None] = None,
                 use_tqdm: bool = False,
                 lora_request: Union[LoRARequest, Sequence[Optional[LoRARequest]], None] = None) -> List[RequestOutput]:
        """Complete every prompt (text, token ids, or ``{"prompt": ...}`` /
        ``{"prompt_token_ids": [...]}``); all are submitted at once.
        ``use_tqdm`` is accepted for vLLM scripts; no progress bar is drawn.
        ``lora_request``: one LoRA adapter for every prompt, or one (or
        None) per prompt, as vLLM takes it (engine loaded with enable_lora)."""
        if isinstance(prompts, (str, dict)) or (
                isinstance(prompts, Sequence) and prompts and isinstance(prompts[0], int)):
            prompts = [prompts]
        inputs = [_prompt(p) for p in prompts]
        params = [self.engine._lora_params(p, lora) for p, lora in
                  zip(_per_prompt(sampling_params, len(inputs)), _per_prompt_lora(lora_request, len(inputs)))]
        # Every sequence a pull request, all read together on this thread.
        calls = [functools.partial(self.engine._pull_call, prompt, p.for_choice(i), priority=None)
                 for (prompt, _text), p in zip(inputs, params) for i in range(p.n)]
        with self.engine._pulled_batch(calls) as batch:
            for _request_event in batch:
                pass
            completions = iter([request.completion() for request in batch.requests])
        outputs = []
        for (prompt, text), p in zip(inputs, params):
            done = [next(completions) for _ in range(p.n)]
            outputs.append(RequestOutput(str(next(self._ids)), text, self.engine.prompt_token_ids(prompt, p),
                                         [_completion_output(i, c) for i, c in enumerate(done)],
                                         prompt_logprobs=_vllm_sequence(done[0].prompt_logprobs)))
        return outputs

    def embed(self, prompts: Union[PromptInput, Sequence[PromptInput]], *,
              truncate_prompt_tokens: Optional[int] = None, use_tqdm: bool = False,
              pooling_params: Optional[PoolingParams] = None) -> List[EmbeddingRequestOutput]:
        """vLLM's ``LLM.embed``: one :class:`EmbeddingRequestOutput` per prompt
        (text, token ids, or a prompt dict), all submitted at once; the engine
        must serve embeddings (``runner="pooling"``, ``convert="embed"`` or an
        embedding model)."""
        inputs = _pooling_inputs(prompts)
        params = pooling_params or PoolingParams()
        vectors = self.engine.embed(inputs, dimensions=params.dimensions, normalize=params.normalize,
                                    truncate_prompt_tokens=truncate_prompt_tokens)
        return [EmbeddingRequestOutput(str(next(self._ids)), EmbeddingOutput(vector), ids)
                for vector, ids in zip(vectors, self._pooled_ids(inputs, truncate_prompt_tokens))]

    def classify(self, prompts: Union[PromptInput, Sequence[PromptInput]], *,
                 truncate_prompt_tokens: Optional[int] = None,
                 use_tqdm: bool = False) -> List[ClassificationRequestOutput]:
        """vLLM's ``LLM.classify``: one :class:`ClassificationRequestOutput`
        per prompt (``.outputs.probs``), from a classification model (a
        ``*ForSequenceClassification`` head; refused by name otherwise)."""
        inputs = _pooling_inputs(prompts)
        probs = self.engine.classify(inputs, truncate_prompt_tokens=truncate_prompt_tokens)
        return [ClassificationRequestOutput(str(next(self._ids)), ClassificationOutput(p), ids)
                for p, ids in zip(probs, self._pooled_ids(inputs, truncate_prompt_tokens))]

    def encode(self, prompts: Union[PromptInput, Sequence[PromptInput]], pooling_params: Optional[PoolingParams] = None,
               *, truncate_prompt_tokens: Optional[int] = None, use_tqdm: bool = False,
               pooling_task: Optional[str] = None) -> List[PoolingRequestOutput]:
        """vLLM's ``LLM.encode``: one :class:`PoolingRequestOutput` per prompt,
        the pooler's output for ``pooling_task`` ("embed", "token_embed":
        every prompt row as ALL / STEP pooling keeps it, "classify"; None:
        the model's own task)."""
        inputs = _pooling_inputs(prompts)
        params = pooling_params or PoolingParams()
        data = self.engine.encode(inputs, task=pooling_task, dimensions=params.dimensions,
                                  normalize=params.normalize, truncate_prompt_tokens=truncate_prompt_tokens)
        return [PoolingRequestOutput(str(next(self._ids)), PoolingOutput(d), ids)
                for d, ids in zip(data, self._pooled_ids(inputs, truncate_prompt_tokens))]

    def _pooled_ids(self, inputs: List[Any], truncate_prompt_tokens: Optional[int]) -> List[List[int]]:
        """Each pooled prompt's ids, as the engine cut them."""
        out = []
        for prompt in inputs:
            ids = self.engine.tokenize(prompt) if isinstance(prompt, str) else list(prompt)
            if truncate_prompt_tokens is not None and truncate_prompt_tokens > 0:
                ids = ids[-truncate_prompt_tokens:]  # (-1 cuts only past max_model_len)
            out.append(ids)
        return out

    def score(self, data_1: Union[str, Sequence[str]], data_2: Union[str, Sequence[str]], *,
              truncate_prompt_tokens: Optional[int] = None, use_tqdm: bool = False) -> List[ScoringRequestOutput]:
        """vLLM's ``LLM.score``: one :class:`ScoringRequestOutput` per pair
        (``data_1`` one text against every ``data_2`` text, or pair by pair);
        the engine scores with its score head (``hf_overrides``
        classifier_from_token) or, for an embedding model, by cosine similarity."""
        scores = self.engine.score(data_1, data_2, truncate_prompt_tokens=truncate_prompt_tokens)
        return [ScoringRequestOutput(str(next(self._ids)), ScoringOutput(s), []) for s in scores]

    def chat(self, messages: Union[Conversation, Sequence[Conversation]],
             sampling_params: Union[SamplingParams, Sequence[SamplingParams], None] = None,
             use_tqdm: bool = False, chat_template_kwargs: Optional[Dict[str, Any]] = None,
             tools: Optional[List[Dict[str, Any]]] = None,
             chat_template: Optional[str] = None,
             lora_request: Union[LoRARequest, Sequence[Optional[LoRARequest]], None] = None) -> List[RequestOutput]:
        """Chat completions with the model's template, or ``chat_template``
        (the template's text, as in vLLM): one conversation (a list of
        messages) or a batch of them, submitted at once."""
        if not self._fallback_checked and chat_template is None:
            self._fallback_checked = True
            if uses_plain_fallback(self.engine):
                warnings.warn(FALLBACK_WARNING, UserWarning, stacklevel=2)
        conversations = [messages] if messages and isinstance(messages[0], dict) else list(messages)
        params = _per_prompt(sampling_params, len(conversations))
        bodies = []
        for conversation, p, lora in zip(conversations, params, _per_prompt_lora(lora_request, len(conversations))):
            body = dict(_chat_fields(p), messages=conversation, return_token_ids=True)
            body = self.engine._lora_body(body, lora)
            if chat_template_kwargs is not None:
                body["chat_template_kwargs"] = chat_template_kwargs
            if tools is not None:
                body["tools"] = tools
            if chat_template is not None:
                body["chat_template"] = chat_template
            bodies.append(body)
        # Every conversation a pull chat call, all read together on this thread.
        calls = [lambda poller, body=body: self.engine._chat_pull_call(body, poller) for body in bodies]
        with self.engine._pulled_batch(calls) as batch:
            index = {request: i for i, request in enumerate(batch.requests)}
            parts: List[List[str]] = [[] for _ in bodies]
            for request, event in batch:
                parts[index[request]].append(event.delta)
        responses = ["".join(texts) for texts in parts]
        outputs = []
        texts: Dict[int, bytes] = {}  # token id -> its text, for the logprob entries
        for text in responses:
            response = json.loads(text)
            choices = []
            for choice in response["choices"]:
                logprobs = None
                if choice.get("logprobs") is not None:
                    logprobs = tuple(self._token_logprob(e, texts) for e in choice["logprobs"]["content"])
                choices.append(CompletionOutput(
                    choice["index"], choice["message"].get("content") or "", tuple(choice["token_ids"]),
                    sum(t.logprob for t in logprobs) if logprobs else None, _vllm_sequence(logprobs),
                    choice["finish_reason"]))
            outputs.append(RequestOutput(str(next(self._ids)), None, response["prompt_token_ids"], choices))
        return outputs

    def _token_logprob(self, entry: Dict[str, Any], texts: Dict[int, bytes]) -> TokenLogprob:
        """A chat logprob entry named "token_id:<id>" as a TokenLogprob; its
        bytes are the token's decoded text (as vLLM's decoded_token: a token
        that is part of a UTF-8 sequence shows U+FFFD)."""
        token_id = int(entry["token"][len("token_id:"):])
        if token_id not in texts:
            texts[token_id] = self.engine.detokenize([token_id]).encode()
        return TokenLogprob(token_id, texts[token_id], float(entry["logprob"]),
                            tuple(self._token_logprob(alt, texts) for alt in entry.get("top_logprobs", ())))


def _per_prompt_lora(lora_request: Any, n: int) -> List[Optional[LoRARequest]]:
    """vLLM's lora_request argument: one for all prompts, or one per prompt."""
    if lora_request is None or isinstance(lora_request, LoRARequest):
        return [lora_request] * n
    loras = list(lora_request)
    if len(loras) != n:
        raise InvalidConfigurationError("lora_request has %d entries for %d prompts" % (len(loras), n))
    return loras


def _completion_output(index: int, completion: Completion) -> CompletionOutput:
    logprobs = completion.logprobs
    cumulative = sum(t.logprob for t in logprobs) if logprobs else None
    return CompletionOutput(index, completion.text, completion.token_ids or (), cumulative, _vllm_sequence(logprobs),
                            None if completion.finish_reason is None else str(completion.finish_reason))


def _pooling_inputs(prompts: Any) -> List[Any]:
    """The pooling calls' prompts (one or a list of texts, token ids or prompt dicts) as engine inputs."""
    if isinstance(prompts, (str, dict)) or (
            isinstance(prompts, Sequence) and prompts and isinstance(prompts[0], int)):
        prompts = [prompts]
    return [_prompt(p)[0] for p in prompts]


class _Tokenizer:
    """The engine's tokenizer with the two calls vLLM scripts use."""

    def __init__(self, engine: Engine):
        self._engine = engine

    def encode(self, text: str, add_special_tokens: bool = True) -> List[int]:
        return self._engine.tokenize(text, add_special_tokens=add_special_tokens)

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._engine.detokenize(token_ids, skip_special_tokens=skip_special_tokens)
