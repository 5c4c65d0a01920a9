"""The engine: :class:`Engine` (a loaded model: blocking, streaming,
non-blocking and async completions, chat, tokens, statistics) and its
fluent :class:`EngineBuilder`. It converts through
:mod:`vllm_cpp.marshalling`; every request it reads itself is a pull
request (:mod:`vllm_cpp.pull_requests`: blocking calls and generators poll
on the calling thread, async ones on their event loop's poller descriptor),
and only :meth:`Engine.submit` / :meth:`Engine.submit_chat`, the C ABI's
callback requests, deliver through :mod:`vllm_cpp.callbacks` on a native
delivery thread. The engine itself is native."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import threading
import weakref
from typing import (
    Any,
    AsyncIterator,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _ffi
from ._ffi import decode_cstr, encode_str, ffi, lib
from .callbacks import TOKEN_TRAMPOLINE, TokenSink, WeakSink, stream_continues
from .checks import int32
from .engine_options import (
    ENGINE_OPTION_TABLE,
    EngineOption,
    PathLike,
    normalize_options,
)
from .multimodal import NativeImages, split_chat_images
from .errors import InvalidConfigurationError
from .handle_lifetime import HandleLifetime
from .marshalling import (
    NativeSampling,
    model_path_str,
    native_model_params,
    native_options_json,
)
from .outputs import Completion, TokenLogprob, decode_embedding
from .pull_requests import (
    EventPoller,
    PulledBatch,
    PulledRun,
    RequestEvents,
    ThreadPoller,
    aiterate_request,
    await_request,
    running_loop,
)
from .lora import LoRARequest, lora_fields, with_lora
from .request import Request
from .sampling_params import SamplingParams
from .stream_events import StreamEvent, StreamOutcome

__all__ = ["Engine", "EngineBuilder", "Prompt"]

#: A prompt: text, or token ids used as they are (no BOS added).
Prompt = Union[str, Sequence[int]]

StreamCallback = Callable[[StreamEvent], Any]


def _load_signature() -> inspect.Signature:
    """``Engine.load(cls, model_path, *, <every option>=None)``."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    return inspect.Signature(
        [inspect.Parameter("cls", inspect.Parameter.POSITIONAL_OR_KEYWORD),
         inspect.Parameter("model_path", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=PathLike)]
        + [inspect.Parameter(o.name, keyword, default=None, annotation=Optional[o.kind.annotation])
           for o in ENGINE_OPTION_TABLE],
        return_annotation="Engine")


def _pooling_body(inputs: Any, add_special_tokens: bool, priority: int, **optional: Any) -> Dict[str, Any]:
    """The body of a pooling call (embeddings, classify, pooling): its inputs
    (a text, texts, token ids or lists of them) and the options that are set."""
    if isinstance(inputs, (list, tuple)):
        inputs = list(inputs)
    body: Dict[str, Any] = {"input": inputs, "add_special_tokens": bool(add_special_tokens), "priority": priority}
    body.update({name: value for name, value in optional.items() if value is not None})
    return body


class EngineBuilder:
    """Fluent form of :meth:`Engine.load`: one method per option, same names.

    ``Engine.builder(path).num_blocks(64).max_model_len(256).load()``
    """

    def __init__(self, model_path: PathLike):
        self._model_path = model_path
        self._options: Dict[str, Any] = {}

    def _set(self, name: str, value: Any) -> "EngineBuilder":
        self._options[name] = value
        return self

    @property
    def model_path(self) -> PathLike:
        return self._model_path

    @property
    def options(self) -> Dict[str, Any]:
        """The options set so far, validated and normalized like Engine.load does."""
        return normalize_options(dict(self._options))

    def load(self) -> "Engine":
        """Load the engine with these options (see :meth:`Engine.load`)."""
        return Engine.load(self._model_path, **self._options)

    def __repr__(self) -> str:
        return "EngineBuilder(%r, %r)" % (self._model_path, self._options)


def _builder_method(option: EngineOption) -> Callable[[EngineBuilder, Any], EngineBuilder]:
    def set_option(self: EngineBuilder, value: Any) -> EngineBuilder:
        return self._set(option.name, value)

    set_option.__name__ = option.name
    set_option.__qualname__ = "EngineBuilder." + option.name
    set_option.__doc__ = option.doc
    set_option.__annotations__ = {"value": Optional[option.kind.annotation], "return": "EngineBuilder"}
    return set_option


for _option in ENGINE_OPTION_TABLE:
    setattr(EngineBuilder, _option.name, _builder_method(_option))


def _free_engine(ptr, pollers: List[EventPoller]) -> None:
    for poller in pollers:  # a native poller holds the engine until freed
        poller.close()
    lib.vllm_engine_free(ptr)


class Engine:
    """A loaded model with its KV cache and scheduler (``vllm_engine``).

    Create it with :meth:`load` or :meth:`builder`. One engine is safe to
    share between threads; concurrent calls are batched by the native
    scheduler. ``close()`` or ``with Engine.load(...) as engine:`` release it
    deterministically (close waits for no call: the native handle is freed
    when the last call in flight is done; a live native request holds the
    engine itself); otherwise an ``ffi.gc`` finalizer does.
    """

    def __init__(self, ptr, model_path: str, options: Dict[str, Any]):
        self._ptr = ptr
        self._model_path = model_path
        self._options = options
        # The async requests' pollers, one per event loop, made at a loop's
        # first request (a list so the engine's free, which must not hold the
        # Engine, can reach them).
        self._pollers: List[EventPoller] = []
        self._pollers_lock = threading.Lock()
        self._lifetime = HandleLifetime(ptr, functools.partial(_free_engine, ptr, self._pollers), "engine")
        lifetime = self._lifetime
        # The finalizer closes the lifetime; the native free waits for the
        # calls in flight.
        self._gc = ffi.gc(ffi.cast("void*", ptr), lambda _p: lifetime.close())
        self._requests: "weakref.WeakSet[Request]" = weakref.WeakSet()
        self._requests_lock = threading.Lock()

    # -- construction ------------------------------------------------------
    @classmethod
    def load(cls, model_path: PathLike, **options: Any) -> "Engine":
        """Load a model: a GGUF file or a Hugging Face model directory.

        The keywords are the options of ``ENGINE_OPTION_TABLE`` (see
        docs/python-api.md). Every option left at ``None`` takes the native
        default (``vllm_model_params`` and ``vllm_engine_load_with_options``
        in the C ABI). Raises :class:`AbiMismatchError` (checked first),
        ``TypeError`` for an unknown option, :class:`InvalidConfigurationError`
        for a value the ABI cannot carry, :class:`ModelLoadError` (path and
        reason in the message) and :class:`InvalidArgumentError` from the
        engine.
        """
        _ffi.check_abi()
        options = normalize_options(options)
        path = model_path_str(model_path)
        params, keep = native_model_params(path, options)
        options_json = native_options_json(options)
        out = ffi.new("vllm_engine**")
        status = lib.vllm_engine_load_with_options(
            params, ffi.NULL if options_json is None else encode_str(options_json, "options"), out)
        del keep
        if status != 0:
            if out[0] != ffi.NULL:  # the ABI says it stays NULL; be safe anyway
                lib.vllm_engine_free(out[0])
            _ffi.check(status)
        if out[0] == ffi.NULL:
            raise _ffi.error_for_status(4, "vllm_engine_load_with_options returned OK but no engine")
        return cls(out[0], path, options)

    # help(Engine.load) and IDEs show one keyword per option.
    load.__func__.__signature__ = _load_signature()

    @classmethod
    def builder(cls, model_path: PathLike) -> EngineBuilder:
        """A fluent :class:`EngineBuilder` for ``model_path``."""
        return EngineBuilder(model_path)

    # -- state -------------------------------------------------------------
    @property
    def model_path(self) -> str:
        return self._model_path

    @property
    def options(self) -> Dict[str, Any]:
        """The options the engine was loaded with (those that were set)."""
        return dict(self._options)

    @property
    def closed(self) -> bool:
        return self._lifetime.closed

    def _use(self):
        return self._lifetime.use()

    def close(self) -> None:
        """Release the engine: live requests are closed first; the native
        handle is freed once calls still in flight on other threads return.
        Idempotent."""
        with self._requests_lock:
            requests = list(self._requests)
        for req in requests:
            req.close()
        self._lifetime.close()

    def cancel_all(self) -> None:
        """Cancel every live request (chat calls included): each ends at the
        next engine step with finish reason ``abort``. A server's shutdown."""
        with self._requests_lock:
            requests = list(self._requests)
        for request in requests:
            request.cancel()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<vllm_cpp.Engine %r%s>" % (self._model_path, " closed" if self.closed else "")

    # -- completion --------------------------------------------------------
    def complete(self, prompt: Prompt, params: Optional[SamplingParams] = None, *,
                 lora_request: Optional[LoRARequest] = None) -> Completion:
        """Blocking completion of ``prompt`` (default params: the native
        defaults, e.g. ``max_tokens=16``), with its token ids (and logprobs
        when asked for): a pull request read on this thread, whatever the
        parameters. ``lora_request``: the LoRA adapter it runs (registered
        at its first use, :meth:`add_lora`)."""
        params = self._lora_params(params, lora_request)
        with self._pulled(lambda poller: self._pull_call(prompt, params, poller, None)) as run:
            for _event in run:
                pass
            return run.request.completion()

    def complete_stream(self, prompt: Prompt, params: Optional[SamplingParams],
                        callback: StreamCallback) -> StreamOutcome:
        """Blocking streaming completion: ``callback(StreamEvent)`` is called
        on this thread with each delta, then once with ``finished=True`` when
        the request finishes by itself. Returning ``StreamControl.STOP`` (or
        False) stops the request. An exception from the callback cancels the
        request and is re-raised here unchanged; the engine stays usable."""
        if not callable(callback):
            raise InvalidConfigurationError("callback must be callable")
        with self._pulled(lambda poller: self._pull_call(prompt, params, poller, None)) as run:
            for event in run:
                if not _call_back(callback, event, run.request):
                    return StreamOutcome(stopped_by_callback=True)
        return StreamOutcome(stopped_by_callback=False)

    def stream(self, prompt: Prompt, params: Optional[SamplingParams] = None) -> Iterator[str]:
        """Generator of the text deltas of a completion, submitted at the
        first ``next()``. Breaking out of it (or closing it) cancels the
        request promptly."""
        _check_prompt(prompt)
        params = _sampling(params)
        NativeSampling(params).close()  # surface conversion errors now
        return self._iterate(lambda poller: self._pull_call(prompt, params, poller, None))

    def _pulled(self, pull_call: Callable[[ThreadPoller], tuple]) -> PulledRun:
        """One pull request read on this thread (see :meth:`_pulled_batch`)."""
        return PulledRun(self._pulled_batch([pull_call]))

    def _pulled_batch(self, pull_calls: Sequence[Callable[[ThreadPoller], tuple]]) -> PulledBatch:
        """Pull requests read together on this thread (``LLM`` uses it too):
        each ``pull_call(poller)`` gives ``_start_request``'s arguments for a
        request reporting to ``poller`` (the batch's own), submitted in
        order. The batch holds the engine (as a blocking native call would:
        ``close()`` frees it after the batch); its requests are not among
        the engine's live requests (``cancel_all`` is for those). A refused
        submit cancels and frees those made before it, then raises."""
        self._lifetime.acquire()
        try:
            poller = ThreadPoller(self._ptr)
        except BaseException:
            self._lifetime.release()
            raise
        requests: List[Request] = []
        try:
            for pull_call in pull_calls:
                requests.append(self._start_request(*pull_call(poller), live=False))
        except BaseException:
            for request in requests:
                request.close()  # cancels it; returns once the engine has let go of it
            poller.close()
            self._lifetime.release()
            raise
        return PulledBatch(requests, poller, self._lifetime.release)

    def _iterate(self, pull_call: Callable[[ThreadPoller], tuple],
                 convert: Callable[[str], Any] = lambda s: s) -> Iterator[Any]:
        """Generator over the non-empty deltas of a pull request read on the
        calling thread, submitted at the first ``next()``; closing it
        cancels the request and returns once the engine has let go of it."""
        with self._pulled(pull_call) as run:
            for event in run:
                if event.delta:
                    yield convert(event.delta)

    # -- tokens ------------------------------------------------------------
    def tokenize(self, text: str, *, add_special_tokens: bool = True) -> List[int]:
        """The token ids of ``text`` (``vllm_tokenize``); with
        ``add_special_tokens`` they are the ids a text prompt is run with."""
        text_b = encode_str(text, "text")
        return self._token_ids_of(lambda h, ids, n: lib.vllm_tokenize(h, text_b, bool(add_special_tokens), ids, n))

    def prompt_token_ids(self, prompt: Prompt, params: Optional[SamplingParams] = None) -> List[int]:
        """The ids ``prompt`` runs with: a text prompt tokenized as
        :meth:`submit` tokenizes it (with BOS), token ids as given (each
        checked to be a 32-bit int), the last ``params.truncate_prompt_tokens``
        of them when that is set (as the engine keeps them)."""
        ids = self.tokenize(prompt) if isinstance(prompt, str) else _token_ids(prompt, "prompt")
        keep = params.truncate_prompt_tokens if params is not None else None
        return ids[-keep:] if keep is not None and 0 < keep < len(ids) else ids

    def tokenize_chat(self, request: Union[str, Dict[str, Any]]) -> List[int]:
        """The prompt ids of an OpenAI chat request (``vllm_chat_tokenize``):
        its messages rendered by the model's template and tokenized as
        :meth:`chat` runs them; the request is validated as :meth:`chat`
        validates it."""
        request_b = encode_str(_request_json(request), "request_json")
        return self._token_ids_of(lambda h, ids, n: lib.vllm_chat_tokenize(h, request_b, ids, n))

    def _token_ids_of(self, call: Callable[[Any, Any, Any], int]) -> List[int]:
        """The ids a native ``(engine, int32_t** ids, int32_t* n)`` call
        hands over, freed after the copy."""
        out_ids = ffi.new("int32_t**")
        out_n = ffi.new("int32_t*")
        with self._use() as h:
            status = call(h, out_ids, out_n)
        try:
            _ffi.check(status)
            return list(ffi.unpack(out_ids[0], out_n[0])) if out_n[0] > 0 else []
        finally:
            lib.vllm_tokens_free(out_ids[0])

    def detokenize(self, token_ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        """The text of ``token_ids`` (``vllm_detokenize``); an id outside the
        vocabulary is :class:`InvalidArgumentError`."""
        ids = _token_ids(token_ids, "token_ids")
        array = ffi.new("int32_t[]", ids) if ids else ffi.NULL
        return self._string_of(
            lambda h, out: lib.vllm_detokenize(h, array, len(ids), bool(skip_special_tokens), out), "text")

    # -- chat --------------------------------------------------------------
    def chat_json(self, request: str) -> str:
        """OpenAI ``/v1/chat/completions`` request JSON in, ``chat.completion``
        JSON out (its ``stream`` field aside)."""
        return self._protocol_json(self._chat_pull_call, request)

    def completions_json(self, request: str) -> str:
        """OpenAI ``/v1/completions`` request JSON in, ``text_completion``
        JSON out (its ``stream`` field aside): the engine's own protocol
        room, as the server runs it."""
        return self._protocol_json(self._completions_pull_call, request)

    def completions_stream(self, request: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
        """Generator of ``text_completion`` chunk dicts; closing it cancels."""
        return self._protocol_chunks(self._completions_pull_call, request)

    def _protocol_json(self, pull_call, request: Any) -> str:
        """The whole response JSON of an OpenAI call (``pull_call``: the
        chat or completions entry point), read on this thread."""
        body = _with_stream(request, False)
        encode_str(body, "request_json")
        with self._pulled(lambda poller: pull_call(body, poller)) as run:
            return "".join(event.delta for event in run)

    def _protocol_chunks(self, pull_call, request: Any) -> Iterator[Dict[str, Any]]:
        """Generator of an OpenAI call's chunk dicts; closing it cancels."""
        body = _with_stream(request, True)
        encode_str(body, "request_json")
        return self._iterate(lambda poller: pull_call(body, poller), json.loads)

    def chat(self, request: Dict[str, Any], *, lora_request: Optional[LoRARequest] = None) -> Dict[str, Any]:
        """OpenAI chat completion: request dict in, ``chat.completion`` dict
        out (``lora_request``: as :meth:`complete`)."""
        return json.loads(self.chat_json(_request_json(self._lora_body(request, lora_request))))

    # -- LoRA adapters (enable_lora) -------------------------------------------
    def add_lora(self, lora_request: LoRARequest) -> bool:
        """Register ``lora_request``'s adapter (``vllm_lora_adapter_add``:
        loaded and checked against the base model now; ModelLoadError naming
        the adapter, tensor and shapes). False when the same id, name and
        path are registered already."""
        lora_fields(lora_request)  # type check
        registered = {a["id"]: a for a in self.list_loras()}
        same = registered.get(lora_request.lora_int_id)
        if same is not None and same["name"] == lora_request.lora_name and same["path"] == lora_request.path:
            return False
        name_b, path_b = encode_str(lora_request.lora_name, "lora_name"), encode_str(lora_request.path, "lora_path")
        with self._use() as ptr:
            _ffi.check(lib.vllm_lora_adapter_add(ptr, int32(lora_request.lora_int_id, "lora_int_id"), name_b, path_b))
        return True

    def remove_lora(self, lora_int_id: int) -> None:
        """Unregister adapter ``lora_int_id`` (requests running it finish)."""
        with self._use() as ptr:
            _ffi.check(lib.vllm_lora_adapter_remove(ptr, int32(lora_int_id, "lora_int_id")))

    def list_loras(self) -> List[Dict[str, Any]]:
        """The registered adapters: ``[{"id", "name", "path"}, ...]`` by id."""
        return self._json_of(lib.vllm_lora_adapters, "adapters")

    def _lora_params(self, params: Optional[SamplingParams], lora_request: Optional[LoRARequest]) -> SamplingParams:
        params = _sampling(params)
        if lora_request is None:
            return params
        self.add_lora(lora_request)
        return with_lora(params, lora_request)

    def _lora_body(self, request: Union[str, Dict[str, Any]],
                   lora_request: Optional[LoRARequest]) -> Union[str, Dict[str, Any]]:
        if lora_request is None:
            return request
        self.add_lora(lora_request)
        body = json.loads(request) if isinstance(request, str) else dict(request)
        return dict(body, **lora_fields(lora_request))

    def chat_stream_json(self, request: str, callback: StreamCallback) -> StreamOutcome:
        """Streaming chat: each event's ``delta`` is one ``chat.completion.chunk``
        JSON object; the terminal event has ``finished=True`` and ``""``
        (the callback runs on this thread, as for :meth:`complete_stream`)."""
        if not callable(callback):
            raise InvalidConfigurationError("callback must be callable")
        body = _with_stream(request, True)
        encode_str(body, "request_json")
        with self._pulled(lambda poller: self._chat_pull_call(body, poller)) as run:
            for event in run:
                if not _call_back(callback, event, run.request):
                    return StreamOutcome(stopped_by_callback=True)
        return StreamOutcome(stopped_by_callback=False)

    def chat_stream(self, request: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
        """Generator of ``chat.completion.chunk`` dicts; closing it cancels."""
        return self._protocol_chunks(self._chat_pull_call, request)

    # -- embeddings (issue 43) ----------------------------------------------
    def embeddings_json(self, request: str) -> str:
        """OpenAI ``/v1/embeddings`` request JSON in, its response JSON out
        (``vllm_embeddings``: the engine's protocol room, as the server runs
        it); blocks this thread until every vector is ready."""
        return self._blocking_json(lib.vllm_embeddings, request, "embeddings")

    def embed(self, inputs: Union[str, Sequence[str], Sequence[int], Sequence[Sequence[int]]], *,
              dimensions: Optional[int] = None, normalize: Optional[bool] = None,
              truncate_prompt_tokens: Optional[int] = None, add_special_tokens: bool = True,
              priority: int = 0) -> List[List[float]]:
        """One vector per input (a text, a list of texts, a list of token ids
        or a list of token id lists), as the engine's pooler makes them:
        its pooling type and normalisation (``normalize`` overrides the
        latter), cut to ``dimensions`` (a Matryoshka model only), each prompt
        cut to its last ``truncate_prompt_tokens`` tokens first (-1:
        max_model_len). The engine must serve embeddings (``runner`` pooling
        or both, or an embedding model)."""
        request = _pooling_body(inputs, add_special_tokens, priority, encoding_format="base64", dimensions=dimensions,
                                normalize=normalize, truncate_prompt_tokens=truncate_prompt_tokens)
        response = json.loads(self.embeddings_json(json.dumps(request)))
        return [decode_embedding(item["embedding"]) for item in response["data"]]

    # -- scoring and reranking (issue 43) -----------------------------------
    def score_json(self, request: str) -> str:
        """vLLM's ``/score`` request JSON in, its response JSON out
        (``vllm_score``, the engine's protocol room); blocks this thread."""
        return self._blocking_json(lib.vllm_score, request, "score")

    def rerank_json(self, request: str) -> str:
        """A ``/rerank`` (Jina / Cohere v2 shape) request JSON in, its
        response JSON out (``vllm_rerank``); blocks this thread."""
        return self._blocking_json(lib.vllm_rerank, request, "rerank")

    def score(self, query: Union[str, Sequence[str]], documents: Union[str, Sequence[str]], *,
              truncate_prompt_tokens: Optional[int] = None, priority: int = 0) -> List[float]:
        """One score per document: the query against each (or, with as many
        queries as documents, pair by pair). A model with a score head
        (``hf_overrides`` classifier_from_token: Qwen3-Reranker's yes/no
        form) gives sigmoid(logit[true] - logit[false]) of the pair's
        prompt; an embedding model the cosine similarity of the embeddings."""
        request: Dict[str, Any] = {"text_1": query if isinstance(query, str) else list(query),
                                   "text_2": documents if isinstance(documents, str) else list(documents),
                                   "priority": priority}
        if truncate_prompt_tokens is not None:
            request["truncate_prompt_tokens"] = truncate_prompt_tokens
        response = json.loads(self.score_json(json.dumps(request)))
        return [item["score"] for item in response["data"]]

    # -- classification (issue 43) -------------------------------------------
    def classify_json(self, request: str) -> str:
        """vLLM's ``/classify`` request JSON in, its response JSON out
        (``vllm_classify``, the engine's protocol room); blocks this thread."""
        return self._blocking_json(lib.vllm_classify, request, "classify")

    def classify(self, inputs: Union[str, Sequence[str], Sequence[int], Sequence[Sequence[int]]], *,
                 truncate_prompt_tokens: Optional[int] = None, add_special_tokens: bool = True,
                 priority: int = 0) -> List[List[float]]:
        """One list of class probabilities per input (a text, a list of texts,
        token ids or token id lists): a classification model's head
        (``*ForSequenceClassification``), softmax over its labels (sigmoid
        for one label), as vLLM's classify task gives them."""
        request = _pooling_body(inputs, add_special_tokens, priority, truncate_prompt_tokens=truncate_prompt_tokens)
        response = json.loads(self.classify_json(json.dumps(request)))
        return [item["probs"] for item in response["data"]]

    # -- the pooling API (issue 43) ------------------------------------------
    def pooling_json(self, request: str) -> str:
        """vLLM's ``/pooling`` request JSON in, its response JSON out
        (``vllm_pooling``, the engine's protocol room); blocks this thread."""
        return self._blocking_json(lib.vllm_pooling, request, "pooling")

    def encode(self, inputs: Union[str, Sequence[str], Sequence[int], Sequence[Sequence[int]]], *,
               task: Optional[str] = None, dimensions: Optional[int] = None, normalize: Optional[bool] = None,
               truncate_prompt_tokens: Optional[int] = None, add_special_tokens: bool = True,
               priority: int = 0) -> List[Any]:
        """The pooler's raw output per input (vLLM's ``encode``): ``task``
        "embed" (a vector), "token_embed" (a list of rows: ALL or STEP token
        pooling) or "classify" (class probabilities); None: the model's own."""
        request = _pooling_body(inputs, add_special_tokens, priority, task=task, dimensions=dimensions,
                                normalize=normalize, truncate_prompt_tokens=truncate_prompt_tokens)
        response = json.loads(self.pooling_json(json.dumps(request)))
        return [item["data"] for item in response["data"]]

    def _blocking_json(self, entry_point: Callable[[Any, Any, Any], int], request: str, what: str) -> str:
        """The response JSON of a protocol-room entry point that answers in
        one blocking call (embeddings, score, rerank), unlike the pulled
        chat and completions calls of _protocol_json."""
        body = encode_str(request, "request_json")
        return self._string_of(lambda h, out: entry_point(h, body, out), what)

    # -- statistics --------------------------------------------------------
    def stats(self) -> Dict[str, Any]:
        """Engine statistics (a snapshot between engine steps): running and
        waiting requests, KV blocks (``kv_blocks_total/used/free/cached``, of
        the primary KV cache group: full attention when the model has it),
        ``block_size``, ``kv_cache_bytes`` (all groups), ``isa`` (the kernel
        build in use: ``amx``, ``avx512``, ``avx2``, ``neon`` or ``scalar``), prefix-cache
        ``queries`` and ``hits`` (tokens), prompt and generated token totals,
        preemptions, model steps, finished and aborted requests,
        ``kv_cache_groups`` (per group: ``kind``, ``sliding_window``,
        ``num_layers``, ``blocks_total/used/free/cached``, ``bytes``) and
        ``kv_transfer`` (the KV connector's counters, or None without one);
        for a mixture-of-experts model whose experts are prepared on first
        routing, ``prepared_experts``: ``experts`` prepared of
        ``experts_total`` (all layers), their copies' ``bytes`` and
        ``max_bytes``, the most those can take."""
        return self._json_of(lib.vllm_engine_stats, "stats")

    def _string_of(self, entry_point: Callable[[Any, Any], int], what: str) -> str:
        """The string an ``entry_point(engine, char** out)`` returns (the
        library's, freed here)."""
        out = ffi.new("char**")
        with self._use() as ptr:
            status = entry_point(ptr, out)
        try:
            _ffi.check(status)
            return decode_cstr(out[0], what) or ""
        finally:
            lib.vllm_string_free(out[0])

    def _json_of(self, entry_point: Callable[[Any, Any], int], what: str) -> Any:
        """The JSON an ``entry_point(engine, char** out)`` returns, parsed."""
        return json.loads(self._string_of(entry_point, what))

    # -- KV cache events (vllm_cpp.kv_events publishes them) --------------
    def kv_events_enable(self) -> None:
        """Start recording the blocks the prefix cache stores and evicts
        (from the next engine step; call it before submitting requests).
        :class:`InvalidArgumentError` when prefix caching is off."""
        with self._use() as ptr:
            _ffi.check(lib.vllm_engine_kv_events_enable(ptr))

    def kv_events_take(self, timeout_ms: int = 0) -> Dict[str, Any]:
        """The recorded events not yet taken, waiting up to ``timeout_ms``
        for some: ``{"dropped": n, "events": [...]}`` as vllm.h's
        vllm_engine_kv_events_take describes (the engine's own chain
        hashes; :mod:`vllm_cpp.kv_events` turns them into vLLM's)."""
        return self._json_of(lambda ptr, out: lib.vllm_engine_kv_events_take(ptr, int(timeout_ms), out),
                             "KV cache events")

    # -- non-blocking requests --------------------------------------------
    def submit(self, prompt: Prompt, params: Optional[SamplingParams],
               callback: StreamCallback, *, priority: Optional[int] = None,
               lora_request: Optional[LoRARequest] = None) -> Request:
        """Start a completion and return at once; ``callback`` runs on a
        native delivery thread. See :class:`Request`.

        ``priority``: lower runs first under ``SchedulerPolicy.PRIORITY``
        (ties in arrival order); other policies ignore it. A text prompt goes
        through the additive ``vllm_request_submit_with_priority`` (the
        default ``0`` is what the v10 ``vllm_request_submit`` submits);
        token ids, ``params.logprobs`` or any of ``params.request_options()``
        through ``vllm_request_submit_with_options``. ``lora_request``: as
        :meth:`complete`.
        """
        params = self._lora_params(params, lora_request)
        if not callable(callback):
            raise InvalidConfigurationError("callback must be callable")
        priority = 0 if priority is None else int32(priority, "priority")
        if not _needs_options(prompt, params):
            prompt_b = encode_str(prompt, "prompt")
            native = NativeSampling(params)
            return self._start_request(
                lambda h, handle, out: lib.vllm_request_submit_with_priority(
                    h, prompt_b, native.ptr, priority, TOKEN_TRAMPOLINE, handle, out),
                callback, native)
        prompt_b, array, n_ids = _native_prompt(prompt)
        logprobs = -1 if params.logprobs is None else params.logprobs
        native = NativeSampling(params)
        return self._start_request(
            lambda h, handle, out: lib.vllm_request_submit_with_options(
                h, prompt_b, array, n_ids, native.ptr, priority, logprobs, native.options, TOKEN_TRAMPOLINE,
                handle, out),
            callback, native)

    def submit_chat(self, request: Union[str, Dict[str, Any]], callback: StreamCallback, *,
                    lora_request: Optional[LoRARequest] = None) -> Request:
        """Start an OpenAI chat call and return at once (``vllm_chat_submit``).
        The request is validated before this returns
        (:class:`InvalidArgumentError` naming the field). ``callback`` gets
        each ``chat.completion.chunk`` JSON when the request has
        ``"stream": true``, else one terminal event carrying the
        ``chat.completion`` JSON. ``cancel()`` stops every choice at the next
        engine step."""
        text_b = encode_str(_request_json(self._lora_body(request, lora_request)), "request_json")
        if not callable(callback):
            raise InvalidConfigurationError("callback must be callable")
        return self._start_request(
            lambda h, handle, out: lib.vllm_chat_submit(h, text_b, TOKEN_TRAMPOLINE, handle, out),
            callback, None)

    def submit_pull(self, prompt: Prompt, params: Optional[SamplingParams], consumer: RequestEvents,
                    *, priority: Optional[int] = None, lora_request: Optional[LoRARequest] = None) -> Request:
        """Start a completion whose output goes to ``consumer`` (a
        :class:`RequestEvents`, which calls this) through the engine's poller
        (``vllm_request_submit_pull``): no thread per request. Refusals as
        :meth:`submit`. The native call waits for a structured-output
        constraint to compile: on an event loop use :meth:`asubmit_pull`."""
        params = self._lora_params(params, lora_request)
        return self._start_request(*self._pull_call(prompt, params, self._poller(consumer), priority, consumer))

    async def asubmit_pull(self, prompt: Prompt, params: Optional[SamplingParams], consumer: RequestEvents,
                           *, priority: Optional[int] = None) -> Request:
        """:meth:`submit_pull` with the native call (which waits while a
        constraint compiles) on the loop's executor, so the loop keeps
        serving meanwhile; without a constraint it is made here (it returns
        at once: no executor thread). The path under :meth:`astream`,
        :meth:`acomplete` and the server."""
        call = self._pull_call(prompt, params, self._poller(consumer), priority, consumer)
        if _sampling(params).structured_output is None:
            return self._start_request(*call)
        return await self._start_request_off_loop(*call)

    def _pull_call(self, prompt: Prompt, params: Optional[SamplingParams], poller, priority: Optional[int],
                   consumer: Optional[RequestEvents] = None, images: Optional[Sequence[Any]] = None):
        """``_start_request``'s arguments for a pull completion reporting to
        ``poller`` (an event loop's, for ``consumer``; or a ThreadPoller).
        ``images``: PIL images for the prompt's image markers (issue 46)."""
        params = _sampling(params)
        priority = 0 if priority is None else int32(priority, "priority")
        prompt_b, array, n_ids = _native_prompt(prompt)
        logprobs = -1 if params.logprobs is None else params.logprobs
        native = NativeSampling(params)
        if images:
            pixels = NativeImages(images)
            return (lambda h, tag, out: lib.vllm_request_submit_pull_with_images(
                        h, poller.ptr, tag, prompt_b, array, n_ids, pixels.ptr, pixels.count, native.ptr, priority,
                        logprobs, native.options, out),
                    None, native, (poller, consumer))
        return (lambda h, tag, out: lib.vllm_request_submit_pull_with_options(
                    h, poller.ptr, tag, prompt_b, array, n_ids, native.ptr, priority, logprobs, native.options, out),
                None, native, (poller, consumer))

    def submit_chat_pull(self, request: Union[str, Dict[str, Any]], consumer: RequestEvents) -> Request:
        """:meth:`submit_chat` with its output going to ``consumer`` through
        the engine's poller (``vllm_chat_submit_pull``); on an event loop
        use :meth:`asubmit_chat_pull`."""
        return self._start_request(*self._chat_pull_call(request, self._poller(consumer), consumer))

    async def asubmit_chat_pull(self, request: Union[str, Dict[str, Any]], consumer: RequestEvents,
                                constrained: Optional[bool] = None) -> Request:
        """:meth:`submit_chat_pull` with the native call on the loop's
        executor when the request may carry a constraint (see
        :meth:`asubmit_pull`; ``constrained``: whether it may, when the
        caller knows, e.g. of text it wrote from a dict); the path under
        :meth:`achat`, :meth:`achat_stream` and the server."""
        return await self._start_protocol_call(self._chat_pull_call(request, self._poller(consumer), consumer),
                                               request, constrained)

    def _chat_pull_call(self, request: Union[str, Dict[str, Any]], poller,
                        consumer: Optional[RequestEvents] = None, fetch_image=None):
        """A pull chat call; image parts (issue 46) decoded here (data: URLs,
        or ``fetch_image(url, what)``: the server's allow-listed fetcher)
        and sent beside the request as pixels."""
        images: List[Any] = []
        if isinstance(request, (bytes, bytearray)):
            request = bytes(request).decode("utf-8", "surrogateescape")
        if isinstance(request, dict):
            request, images = split_chat_images(request, fetch_image)
        elif isinstance(request, str) and '"image' in request:
            try:
                body = json.loads(request)
            except ValueError:
                body = None  # not JSON: the engine refuses it in its own words
            if body is not None:
                body, images = split_chat_images(body, fetch_image)
                if images:
                    request = body
        text_b = encode_str(_request_json(request), "request_json")
        if images:
            pixels = NativeImages(images)
            return (lambda h, tag, out: lib.vllm_chat_submit_pull_with_images(
                        h, poller.ptr, tag, text_b, pixels.ptr, pixels.count, out),
                    None, None, (poller, consumer))
        return (lambda h, tag, out: lib.vllm_chat_submit_pull(h, poller.ptr, tag, text_b, out),
                None, None, (poller, consumer))

    async def asubmit_completions_pull(self, request: Union[str, Dict[str, Any]], consumer: RequestEvents,
                                       constrained: Optional[bool] = None) -> Request:
        """An OpenAI ``/v1/completions`` request (its body) through the
        engine's own protocol room (``vllm_completion_submit_pull``), its
        ``text_completion`` JSON texts going to ``consumer``; submitted as
        :meth:`asubmit_chat_pull` submits a chat request (the server's path)."""
        return await self._start_protocol_call(
            self._completions_pull_call(request, self._poller(consumer), consumer), request, constrained)

    async def _start_protocol_call(self, call, request: Union[str, Dict[str, Any]],
                                   constrained: Optional[bool]) -> Request:
        """Starts an OpenAI call: on the loop's executor when the request may
        carry a constraint to compile, else at once."""
        if not (may_constrain(request) if constrained is None else constrained):
            return self._start_request(*call)
        return await self._start_request_off_loop(*call)

    def _completions_pull_call(self, request: Union[str, Dict[str, Any]], poller,
                               consumer: Optional[RequestEvents] = None):
        text_b = encode_str(_request_json(request), "request_json")
        return (lambda h, tag, out: lib.vllm_completion_submit_pull(h, poller.ptr, tag, text_b, out),
                None, None, (poller, consumer))

    # -- Anthropic's Messages API ---------------------------------------------
    async def asubmit_messages_pull(self, request: Union[str, Dict[str, Any]], consumer: RequestEvents,
                                    constrained: Optional[bool] = None) -> Request:
        """An Anthropic ``/v1/messages`` request (its body) on the chat road
        (``vllm_messages_submit_pull``), its ``message`` JSON or stream
        event JSON texts going to ``consumer``; submitted as
        :meth:`asubmit_chat_pull` submits a chat request."""
        text_b = encode_str(_request_json(request), "request_json")
        poller = self._poller(consumer)
        return await self._start_protocol_call(
            (lambda h, tag, out: lib.vllm_messages_submit_pull(h, poller.ptr, tag, text_b, out),
             None, None, (poller, consumer)), request, constrained)

    def tokenize_messages(self, request: Union[str, Dict[str, Any]]) -> List[int]:
        """The prompt ids of an Anthropic Messages body
        (``vllm_messages_tokenize``): what ``/v1/messages/count_tokens``
        counts."""
        request_b = encode_str(_request_json(request), "request_json")
        return self._token_ids_of(lambda h, ids, n: lib.vllm_messages_tokenize(h, request_b, ids, n))

    def _poller(self, consumer: RequestEvents) -> EventPoller:
        """The poller of the consumer's event loop, made at its first
        request, on the loop's thread (where it starts watching). Pollers of
        closed loops are freed here once no request is left: those nobody
        reads any more are freed first (free_abandoned)."""
        loop = consumer.loop
        if running_loop() is not loop:
            raise RuntimeError("a pull request is submitted on its consumer's running event loop")
        with self._pollers_lock:
            found = None
            for poller in list(self._pollers):
                if poller.loop is loop:
                    found = poller
                elif poller.loop.is_closed():
                    poller.free_abandoned()
                    if poller.idle():
                        poller.close()
                        self._pollers.remove(poller)
            if found is None:
                with self._use() as h:
                    found = EventPoller(h, loop)
                self._pollers.append(found)
            return found

    def _start_request(self, submit_native: Callable[[Any, Any, Any], int], callback: Optional[StreamCallback],
                       native: Optional[NativeSampling],
                       pull: Optional[Tuple[Any, Optional[RequestEvents]]] = None, live: bool = True) -> Request:
        """Run ``submit_native(engine_ptr, user_data, out)`` and wrap the
        native request; the Request takes over the callback handles. A pull
        request (``pull``: the poller and the consumer) passes its tag as
        user_data and has no callback; its sink only records the outcome.
        ``live``: one of the engine's live requests (closed by ``close()``,
        cancelled by ``cancel_all()``); a blocking call's is not."""
        start = _RequestStart(self, submit_native, callback, native, pull)
        return start.wrap(start.call(), live)

    async def _start_request_off_loop(self, submit_native: Callable[[Any, Any, Any], int],
                                      callback: Optional[StreamCallback], native: Optional[NativeSampling],
                                      pull: Tuple[EventPoller, RequestEvents]) -> Request:
        """``_start_request`` of a pull request, the native call on the
        loop's default executor. Cancelled while it runs, the request it
        makes is cancelled and closed (its consumer released) once it returns."""
        start = _RequestStart(self, submit_native, callback, native, pull)
        loop = pull[1].loop
        call = loop.run_in_executor(None, start.call)
        try:
            status = await asyncio.shield(call)
        except asyncio.CancelledError:
            call.add_done_callback(start.abandon)
            raise
        return start.wrap(status)

    # Deprecated: the methods that act on a request are the Request's own.
    def request_completion(self, request: Request) -> Completion:
        """Deprecated: :meth:`Request.completion`."""
        return request.completion()

    def request_prompt_logprobs(self, request: Request) -> Tuple[Optional[TokenLogprob], ...]:
        """Deprecated: :meth:`Request.prompt_logprobs`."""
        return request.prompt_logprobs()

    def request_token_ids(self, request: Request, start: int, count: int) -> List[int]:
        """Deprecated: :meth:`Request.token_ids`."""
        return request.token_ids(start, count)

    # -- async -------------------------------------------------------------
    async def acomplete(self, prompt: Prompt, params: Optional[SamplingParams] = None) -> Completion:
        """The :class:`Completion` (with token ids), built on :meth:`submit`
        without blocking the event loop; cancelling the awaiting task
        cancels the request."""
        return await await_request(lambda events: self.asubmit_pull(prompt, params, events), Request.completion)

    def astream(self, prompt: Prompt, params: Optional[SamplingParams] = None) -> AsyncIterator[str]:
        """Async generator of text deltas, built on :meth:`submit_pull`;
        leaving it early or cancelling the task cancels the request."""
        _check_prompt(prompt)
        return aiterate_request(lambda events: self.asubmit_pull(prompt, params, events))

    async def achat(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """:meth:`chat` through :meth:`submit_chat`, without blocking the
        event loop; cancelling the task cancels every choice natively."""
        body = _with_stream(request, False)
        constrained = may_constrain(request)  # of the dict: the text is not looked into
        parts = [part async for part in aiterate_request(
            lambda events: self.asubmit_chat_pull(body, events, constrained))]
        return json.loads("".join(parts))

    def achat_stream(self, request: Dict[str, Any]) -> AsyncIterator[Dict[str, Any]]:
        """Async generator of chunk dicts through :meth:`submit_chat`; leaving
        it early or cancelling the task cancels every choice natively."""
        body = _with_stream(request, True)
        constrained = may_constrain(request)  # of the dict: the text is not looked into
        return aiterate_request(lambda events: self.asubmit_chat_pull(body, events, constrained), json.loads)


#: The chat request fields that may make the engine compile a constraint.
_CONSTRAINT_FIELDS = ("response_format", "structured_outputs", "guided_json", "guided_regex", "guided_choice",
                      "guided_grammar")


def may_constrain(request: Union[str, Dict[str, Any]]) -> bool:
    """Whether a chat request may carry a structured-output constraint to
    compile (text: not looked into, so yes)."""
    if not isinstance(request, dict):
        return True
    tool_choice = request.get("tool_choice")
    return (any(request.get(name) is not None for name in _CONSTRAINT_FIELDS)
            or tool_choice == "required" or isinstance(tool_choice, dict))


class _RequestStart:
    """One submit in two halves: ``call()`` (the native call, on any
    thread) and ``wrap(status)`` (the Request, or the refusal raised), so a
    pull request's native call can run off its event loop."""

    def __init__(self, engine: Engine, submit_native: Callable[[Any, Any, Any], int],
                 callback: Optional[StreamCallback], native: Optional[NativeSampling],
                 pull: Optional[Tuple[EventPoller, RequestEvents]]):
        self._engine = engine
        self._submit_native = submit_native
        self._native = native
        self._pull = pull
        self._logits = native.logits if native is not None else None
        if pull is None:
            self._sink = TokenSink(callback, self._logits)
            self._user_data = _ffi.handles.register(WeakSink(self._sink))  # the Request holds the sink
            self._handles = [self._user_data]
        else:
            self._sink = TokenSink(lambda _event: None, self._logits)  # never called back
            self._user_data = pull[0].register(pull[1])
            self._handles = []
        if native is not None:
            self._handles += native.handles
            native.handles = []
        self._out = ffi.new("vllm_request**")
        self._message = ""
        self._raised: Optional[BaseException] = None

    def call(self) -> int:
        """The native submit; its status (the error text, or what was
        raised, kept for wrap)."""
        try:
            with self._engine._use() as h:  # the native request holds the engine from here on
                status = self._submit_native(h, self._user_data, self._out)
        except BaseException as exc:  # noqa: BLE001 - raised by wrap, on the submitting side
            self._raised = exc
            return -1
        if status != 0 or self._out[0] == ffi.NULL:
            self._message = _ffi.last_error()  # this thread's: read here
        return status

    def wrap(self, status: int, live: bool = True) -> Request:
        out = self._out
        try:
            if self._raised is not None:
                raise self._raised
            if status != 0 or out[0] == ffi.NULL:
                if out[0] != ffi.NULL:
                    lib.vllm_request_free(out[0])
                raise _ffi.error_for_status(status if status != 0 else 4,
                                            self._message or "the submit call returned no request")
        except BaseException:
            if self._pull is not None:
                self._pull[0].unregister(self._user_data)
            for h in self._handles:
                _ffi.handles.release(h)
            raise
        engine = self._engine
        pull = self._pull
        on_free = None if pull is None else functools.partial(pull[0].forget, self._user_data)
        request = Request(engine, out[0], self._sink, self._logits, self._handles, on_free)
        if live:
            with engine._requests_lock:
                engine._requests.add(request)
        return request

    def abandon(self, call: "asyncio.Future[int]") -> None:
        """The awaiting task was cancelled: the request the call made (if
        any) is cancelled, and closed once its last event comes."""
        if call.cancelled() or call.exception() is not None:
            return
        try:
            request = self.wrap(call.result())
        except Exception:  # noqa: BLE001 - refused: nothing was made
            return
        self._pull[1].adopt_released(request)


def _with_stream(request: Any, stream: bool) -> str:
    """The request JSON with its "stream" field set (text that is not a JSON
    object, or is nested past Python's recursion limit, which is above the
    engine's JSON depth limit, is passed on for the engine to refuse)."""
    if isinstance(request, str):
        try:
            parsed = json.loads(request)
        except (ValueError, RecursionError):
            return request
        if not isinstance(parsed, dict):
            return request
        request = parsed
    if not isinstance(request, dict):
        raise InvalidConfigurationError(
            "an OpenAI request must be a dict or JSON str, not %s" % type(request).__name__)
    return _request_json(dict(request, stream=stream))


def _check_prompt(prompt: Any) -> None:
    if isinstance(prompt, str):
        encode_str(prompt, "prompt")
    else:
        _token_ids(prompt, "prompt")


def _sampling(params: Any) -> SamplingParams:
    """``params``, or the defaults for None; anything else is refused."""
    if params is None:
        return SamplingParams()
    if not isinstance(params, SamplingParams):
        raise InvalidConfigurationError("params must be SamplingParams, not %s" % type(params).__name__)
    return params


def _call_back(callback: StreamCallback, event: Any, request: Request) -> bool:
    """Hands a pulled event to a blocking stream's ``callback`` as the
    callback path delivers it: its text as a delta, then (the last event)
    the terminal ``StreamEvent("", True)``. False when the callback stopped
    the request before its terminal event (STOP on it is a natural finish);
    nothing is called once the request's logits processor has failed (the
    request is ending; its outcome raises that)."""
    logits = request._logits
    if logits is not None and logits.error is not None:
        return True
    if event.delta and not _continues(callback(StreamEvent(event.delta, False))):
        return False
    if event.finished:
        _continues(callback(StreamEvent("", True)))
    return True


def _continues(result: Any) -> bool:
    go_on = stream_continues(result)
    if go_on is None:
        raise TypeError("stream callback must return StreamControl, bool or None, not %s" % type(result).__name__)
    return go_on


def _needs_options(prompt: Any, params: SamplingParams) -> bool:
    """Whether a callback request goes through ``vllm_request_submit_with_options``
    (else ``vllm_request_submit_with_priority``)."""
    return not isinstance(prompt, str) or params.logprobs is not None or bool(params.request_options())


def _native_prompt(prompt: Any):
    """(text, ids, n_ids) as the submits with both prompt forms take them:
    text or NULL, an id array or NULL (never NULL for ids: an empty prompt
    is the engine's to refuse, by name)."""
    if isinstance(prompt, str):
        return encode_str(prompt, "prompt"), ffi.NULL, 0
    ids = _token_ids(prompt, "prompt")
    return ffi.NULL, ffi.new("int32_t[]", ids or [0]), len(ids)


def _token_ids(value: Any, name: str) -> List[int]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidConfigurationError(
            "%s must be a str or a sequence of int token ids, not %s" % (name, type(value).__name__))
    return [int32(v, "%s[%d]" % (name, i)) for i, v in enumerate(value)]


def _request_json(request: Any) -> str:
    if isinstance(request, str):
        return request
    try:
        return json.dumps(request)
    except (TypeError, ValueError) as exc:
        raise InvalidConfigurationError("chat request is not JSON-serializable: %s" % exc) from None
