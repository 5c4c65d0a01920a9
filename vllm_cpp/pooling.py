"""vLLM's pooling shapes for ``LLM.embed`` (issue 43): :class:`PoolingParams`
(a request's ``dimensions`` and ``normalize``), :class:`EmbeddingOutput`
(``.embedding``) and :class:`EmbeddingRequestOutput` (``.outputs.embedding``,
``.prompt_token_ids``), as ``vllm.outputs`` and ``vllm.pooling_params`` name them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

__all__ = ["PoolingParams", "EmbeddingOutput", "EmbeddingRequestOutput", "ScoringOutput", "ScoringRequestOutput",
           "ClassificationOutput", "ClassificationRequestOutput", "PoolingOutput", "PoolingRequestOutput"]


@dataclass(frozen=True)
class PoolingParams:
    """One request's pooling options: ``dimensions`` (Matryoshka models only:
    the first N values, then normalisation) and ``normalize`` (None: the
    engine's, which is the model's choice or its pooler_config's)."""

    dimensions: Optional[int] = None
    normalize: Optional[bool] = None


@dataclass(frozen=True)
class EmbeddingOutput:
    """vLLM's ``EmbeddingOutput``: the pooled vector."""

    embedding: List[float]

    @property
    def hidden_size(self) -> int:
        return len(self.embedding)


@dataclass(frozen=True)
class EmbeddingRequestOutput:
    """vLLM's ``EmbeddingRequestOutput`` of one prompt."""

    request_id: str
    outputs: EmbeddingOutput
    prompt_token_ids: List[int]
    finished: bool = True


@dataclass(frozen=True)
class ScoringOutput:
    """vLLM's ``ScoringOutput``: one pair's score."""

    score: float


@dataclass(frozen=True)
class ScoringRequestOutput:
    """vLLM's ``ScoringRequestOutput`` of one (query, document) pair
    (``LLM.score``); prompt_token_ids are not reported (the pair's prompt
    is built in the engine)."""

    request_id: str
    outputs: ScoringOutput
    prompt_token_ids: List[int]
    finished: bool = True


@dataclass(frozen=True)
class ClassificationOutput:
    """vLLM's ``ClassificationOutput``: one prompt's class probabilities."""

    probs: List[float]

    @property
    def num_classes(self) -> int:
        return len(self.probs)


@dataclass(frozen=True)
class ClassificationRequestOutput:
    """vLLM's ``ClassificationRequestOutput`` of one prompt (``LLM.classify``)."""

    request_id: str
    outputs: ClassificationOutput
    prompt_token_ids: List[int]
    finished: bool = True


@dataclass(frozen=True)
class PoolingOutput:
    """vLLM's ``PoolingOutput``: the pooler's raw output (a vector, or a list
    of rows for token_embed; vLLM holds a tensor, this a list)."""

    data: list


@dataclass(frozen=True)
class PoolingRequestOutput:
    """vLLM's ``PoolingRequestOutput`` of one prompt (``LLM.encode``)."""

    request_id: str
    outputs: PoolingOutput
    prompt_token_ids: List[int]
    finished: bool = True
