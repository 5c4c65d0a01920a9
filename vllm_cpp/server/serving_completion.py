"""``POST /v1/completions``: OpenAI's legacy completions on engine requests.

Every (prompt, choice) pair is one engine request, all submitted at once so
the engine batches them; choice ``i`` of a seeded request samples with
``seed + i`` (vLLM's rule, as chat does). Choices are numbered prompt-major
(``prompt_index * n + i``), as vLLM numbers them.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, AsyncIterator, Dict, List, Optional, Sequence, Tuple, Union

from ..engine import Engine
from ..errors import ContextLengthExceededError
from ..outputs import Completion, TokenLogprob
from .generation import CompletionRun, merge
from .metrics import ServerMetrics
from .protocol import CompletionRequest, context_length_exceeded


def _legacy_logprobs(logprobs: Sequence[Union[TokenLogprob, str]], offset: int = 0,
                     as_token_ids: bool = False) -> Tuple[Dict[str, Any], int]:
    """OpenAI's completions ``logprobs`` object (tokens, token_logprobs,
    top_logprobs, text_offset) of tokens whose text starts at ``offset`` in
    the choice's text (a stream's chunks continue the offsets), and the
    offset after them. An entry given as the token's name alone (an echoed
    prompt's first token, which nothing predicts) has null logprobs. With
    ``as_token_ids`` (vLLM's return_tokens_as_token_ids) tokens are named
    "token_id:<id>"."""
    def name(entry: TokenLogprob) -> str:
        return "token_id:%d" % entry.token_id if as_token_ids else entry.token

    offsets = []
    for entry in logprobs:
        offsets.append(offset)
        offset += len(entry if isinstance(entry, str) else name(entry))
    return {
        "tokens": [e if isinstance(e, str) else name(e) for e in logprobs],
        "token_logprobs": [None if isinstance(e, str) else e.logprob for e in logprobs],
        "top_logprobs": [None if isinstance(e, str) else {name(alt): alt.logprob for alt in e.top_logprobs}
                         for e in logprobs],
        "text_offset": offsets,
    }, offset


def _vllm_prompt_logprobs(engine: Engine, entries: Sequence[Optional[TokenLogprob]]) -> List[Any]:
    """vLLM's prompt_logprobs in a response: per prompt token null (the
    first) or {token id: {"logprob", "rank", "decoded_token"}}, the token's
    own entry with its rank, then its alternatives ranked 1, 2, ..."""
    def shown(token_id: int, logprob: float, rank: Optional[int]) -> Dict[str, Any]:
        return {"logprob": logprob, "rank": rank, "decoded_token": engine.detokenize([token_id])}

    out: List[Any] = []
    for entry in entries:
        if entry is None:
            out.append(None)
            continue
        position = {str(entry.token_id): shown(entry.token_id, entry.logprob, entry.rank)}
        for rank, alt in enumerate(entry.top_logprobs, 1):
            position.setdefault(str(alt.token_id), shown(alt.token_id, alt.logprob, rank))
        out.append(position)
    return out


#: Compact JSON, one encoder for every call (json.dumps with arguments
#: builds a new one each time, and this runs per streamed chunk).
_dumps = json.JSONEncoder(separators=(",", ":")).encode


class CompletionServing:
    def __init__(self, engine: Engine, model_name: str, metrics: ServerMetrics):
        self._engine = engine
        self._model = model_name
        self._metrics = metrics

    async def start(self, request: CompletionRequest) -> List[CompletionRun]:
        """Submit every choice now (an engine refusal raises here, with the
        runs already started cancelled)."""
        runs: List[CompletionRun] = []
        try:
            for prompt in request.prompts:
                for i in range(request.n):
                    runs.append(await CompletionRun.submitted(
                        self._engine, prompt, request.params.for_choice(i), request.priority,
                        self._metrics.timer(), token_ids=request.stream and request.return_token_ids))
        except BaseException as exc:
            for run in runs:
                run.cancel()
            if isinstance(exc, ContextLengthExceededError):
                raise context_length_exceeded(exc, "prompt") from None
            raise
        return runs

    def _prompt_ids(self, request: CompletionRequest) -> List[List[int]]:
        """Each prompt's ids as it runs (truncated when asked), worked out
        once per prompt for return_token_ids and echo ([] when neither)."""
        if not (request.return_token_ids or request.echo):
            return []
        return [self._engine.prompt_token_ids(prompt, request.params) for prompt in request.prompts]

    def _echoed_texts(self, request: CompletionRequest, prompt_ids: List[List[int]]) -> List[str]:
        """Each prompt as ``echo`` puts it before the completion: its text,
        or the text of the ids it runs with (given as ids, or truncated)."""
        if not request.echo:
            return []
        return [prompt if isinstance(prompt, str) and request.params.truncate_prompt_tokens is None
                else self._engine.detokenize(ids) for prompt, ids in zip(request.prompts, prompt_ids)]

    def _echoed_entries(self, prompt_ids: List[int], prompt_logprobs: Sequence[Optional[TokenLogprob]],
                        as_token_ids: bool) -> List[Union[TokenLogprob, str]]:
        """An echoed prompt's logprob entries: its first token's name (no
        logprob: nothing precedes it), then the engine's prompt_logprobs."""
        first = "token_id:%d" % prompt_ids[0] if as_token_ids else self._engine.detokenize(prompt_ids[:1])
        return [first] + list(prompt_logprobs[1:])

    def _envelope(self, request_id: str, created: int) -> Dict[str, Any]:
        return {"id": request_id, "object": "text_completion", "created": created,
                "model": self._model}

    @staticmethod
    def _usage(request: CompletionRequest, completions: List[Completion]) -> Dict[str, int]:
        # The prompt counts once per prompt, whatever n is.
        prompt = sum(c.prompt_tokens for c in completions[::request.n])
        generated = 0 if request.echo_only else sum(c.completion_tokens for c in completions)
        return {"prompt_tokens": prompt, "completion_tokens": generated,
                "total_tokens": prompt + generated}

    @staticmethod
    def _finish_reason(request: CompletionRequest, completion: Completion) -> str:
        # Echo without generation ends at its (zero) max_tokens, as vLLM says.
        return "length" if request.echo_only else str(completion.finish_reason)

    def _finish(self, request: CompletionRequest, runs: List[CompletionRun]) -> List[Completion]:
        completions = []
        for run in runs:
            assert run.completion is not None
            run.timer.done()
            self._metrics.finished(self._finish_reason(request, run.completion))
            completions.append(run.completion)
        return completions

    async def complete(self, request: CompletionRequest, runs: List[CompletionRun]) -> Dict[str, Any]:
        """The ``text_completion`` response of started runs (the caller
        cancels them all if this fails or is cancelled)."""
        # merge() reads every run to its end; one that fails or is cancelled
        # cancels the others and waits for them, so none outlives the call.
        async for _output in merge([run.outputs() for run in runs]):
            pass
        completions = self._finish(request, runs)
        response = self._envelope("cmpl-" + uuid.uuid4().hex, int(time.time()))
        prompt_ids = self._prompt_ids(request)
        echoed = self._echoed_texts(request, prompt_ids)

        def logprobs_of(i: int, c: Completion) -> Optional[Dict[str, Any]]:
            if c.logprobs is None:
                return None
            as_ids = request.return_tokens_as_token_ids
            echoed_entries = self._echoed_entries(prompt_ids[i // request.n], c.prompt_logprobs, as_ids) \
                if request.echo else []
            generated = [] if request.echo_only else list(c.logprobs)
            return _legacy_logprobs(echoed_entries + generated, as_token_ids=as_ids)[0]

        def text_of(i: int, c: Completion) -> str:
            return (echoed[i // request.n] if request.echo else "") + ("" if request.echo_only else c.text)

        response["choices"] = [
            {"index": i, "text": text_of(i, c), "logprobs": logprobs_of(i, c),
             "finish_reason": self._finish_reason(request, c)}
            for i, c in enumerate(completions)]
        if request.prompt_logprobs:
            for choice, c in zip(response["choices"], completions):
                choice["prompt_logprobs"] = _vllm_prompt_logprobs(self._engine, c.prompt_logprobs)
        if request.return_token_ids:
            for i, (choice, c) in enumerate(zip(response["choices"], completions)):
                choice["prompt_token_ids"] = prompt_ids[i // request.n]
                choice["token_ids"] = [] if request.echo_only else list(c.token_ids or ())
        response["usage"] = self._usage(request, completions)
        return response

    async def stream(self, request: CompletionRequest, runs: List[CompletionRun],
                     usage_out: Dict[str, int]) -> AsyncIterator[str]:
        """The SSE ``data:`` payloads of started runs: a chunk per delta, a
        finish chunk per choice, the usage chunk when asked, then ``[DONE]``.
        ``usage_out`` gets the usage (for the request log)."""
        envelope = self._envelope("cmpl-" + uuid.uuid4().hex, int(time.time()))
        # Every chunk is this envelope with one choice: its JSON is written
        # once and each chunk only fills in the choice (the per-token cost).
        head = _dumps(dict(envelope, choices=[]))[:-3] + '[{"index":'

        def chunk(index: int, text: str, logprobs: Optional[Dict[str, Any]], finish_reason: Optional[str],
                  ids: str = "") -> str:
            return "%s%d,\"text\":%s,\"logprobs\":%s,\"finish_reason\":%s%s}]}" % (
                head, index, _dumps(text), "null" if logprobs is None else _dumps(logprobs),
                "null" if finish_reason is None else _dumps(finish_reason), ids)

        prompt_ids = self._prompt_ids(request)
        # return_token_ids (vLLM's): a choice's first chunk carries its
        # prompt's ids, every chunk its tokens' ids ([] in the finish chunk).
        prompt_ids_json = [_dumps(ids) for ids in prompt_ids] if request.return_token_ids else None

        def token_ids(index: int, first: bool, ids: Optional[List[int]]) -> str:
            if prompt_ids_json is None:
                return ""
            prompt = ',"prompt_token_ids":%s' % prompt_ids_json[index // request.n] if first else ""
            return '%s,"token_ids":%s' % (prompt, _dumps(ids or []))

        echoed = self._echoed_texts(request, prompt_ids)
        echo_logprobs = request.echo and request.params.logprobs is not None

        def echo_chunk(index: int, run: CompletionRun) -> Tuple[str, int]:
            """The prompt's chunk (with its logprobs, read from the engine
            once its first token is out) and the text offset after it."""
            legacy, offset = None, 0
            if echo_logprobs:
                entries = self._echoed_entries(prompt_ids[index // request.n], run.prompt_logprobs(),
                                               request.return_tokens_as_token_ids)
                legacy, offset = _legacy_logprobs(entries, as_token_ids=request.return_tokens_as_token_ids)
            return chunk(index, echoed[index // request.n], legacy, None, token_ids(index, True, [])), offset

        async def choice(index: int, run: CompletionRun) -> AsyncIterator[str]:
            offset = 0
            first = True
            if request.echo and not echo_logprobs:  # the prompt first
                yield echo_chunk(index, run)[0]
                first = False
            async for text, logprobs, ids in run.outputs():
                if first and echo_logprobs:  # the prompt's logprobs are there with the first token
                    echoed_chunk, offset = echo_chunk(index, run)
                    yield echoed_chunk
                    first = False
                if request.echo_only:  # the token run for the prompt's logprobs is not shown
                    continue
                legacy = None
                if logprobs is not None:
                    legacy, offset = _legacy_logprobs(logprobs, offset, request.return_tokens_as_token_ids)
                yield chunk(index, text, legacy, None, token_ids(index, first, ids))
                first = False
            extra = token_ids(index, first, None)
            if request.prompt_logprobs:  # vLLM's prompt_logprobs, streamed with the choice's finish
                extra += ',"prompt_logprobs":%s' % _dumps(_vllm_prompt_logprobs(self._engine,
                                                                                run.completion.prompt_logprobs))
            yield chunk(index, "", None, self._finish_reason(request, run.completion), extra)

        async for item in merge([choice(i, run) for i, run in enumerate(runs)]):
            yield item
        usage = self._usage(request, self._finish(request, runs))
        usage_out.update(usage)
        if request.include_usage:
            yield _dumps(dict(envelope, choices=[], usage=usage))
        yield "[DONE]"
