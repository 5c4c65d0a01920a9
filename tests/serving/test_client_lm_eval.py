"""lm-evaluation-harness (``lm-eval``) scoring a small local multiple-choice
task through its ``local-completions`` model with the server's own
tokenizer (``tokenizer_backend=remote``: ``/tokenizer_info``, ``/tokenize``):
every choice's log-likelihood it reports is the sum of the engine's own
``prompt_logprobs`` over that choice's tokens. The task and its data are
written in the test's tmp dir (no hub downloads; lm-eval's API models need
no torch)."""

import json
import os

import pytest

# Local files only: the datasets library must not look for a hub.
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
lm_eval = pytest.importorskip(
    "lm_eval", reason="lm-eval is not installed (the test extra installs it on Python 3.10+)")
pytest.importorskip("lm_eval.models.openai_completions")  # the [api] extra: requests, aiohttp, tenacity

from lm_eval.tasks import TaskManager  # noqa: E402

from server_harness import MODEL_NAME, running_server  # noqa: E402
from vllm_cpp import Engine, SamplingParams  # noqa: E402

pytestmark = pytest.mark.timeout(300)

QUESTIONS = [
    {"country": "France", "choices": ["Paris", "Berlin", "Madrid"], "answer": 0},
    {"country": "Germany", "choices": ["Rome", "Berlin", "Lisbon"], "answer": 1},
    {"country": "Italy", "choices": ["Vienna", "Athens", "Rome"], "answer": 2},
]

TASK_YAML = """\
task: vllm_cpp_capitals
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
  cache_dir: {cache}
test_split: test
output_type: multiple_choice
doc_to_text: "Question: What is the capital of {{{{country}}}}?\\nAnswer:"
doc_to_choice: choices
doc_to_target: answer
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
"""


@pytest.fixture(scope="module")
def served_engine(smollm2_path):
    with Engine.load(smollm2_path, max_model_len=256) as engine, running_server(engine, max_model_len=256) as url:
        yield engine, url


@pytest.fixture()
def task_dir(tmp_path):
    data = tmp_path / "capitals.jsonl"
    data.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    (tmp_path / "capitals.yaml").write_text(TASK_YAML.format(data=data, cache=tmp_path / "datasets-cache"))
    return tmp_path


def engine_loglikelihood(engine, context, continuation):
    """What lm-eval's TemplateLM scores, from the engine directly: the
    pair tokenized as it does (trailing spaces of the context move to the
    continuation; the continuation's tokens are those of the whole past the
    context's), summed over the continuation's prompt_logprobs."""
    spaces = len(context) - len(context.rstrip())
    if spaces:
        context, continuation = context[:-spaces], context[-spaces:] + continuation
    whole = engine.tokenize(context + continuation, add_special_tokens=False)
    context_len = len(engine.tokenize(context, add_special_tokens=False))
    entries = engine.complete(whole, SamplingParams.greedy(max_tokens=1, prompt_logprobs=0)).prompt_logprobs
    return sum(entry.logprob for entry in entries[context_len:])


def test_local_completions_scores_with_the_engines_prompt_logprobs(served_engine, task_dir):
    engine, url = served_engine
    results = lm_eval.simple_evaluate(
        model="local-completions",
        model_args={"base_url": url + "/v1/completions", "model": MODEL_NAME, "tokenizer_backend": "remote",
                    "num_concurrent": 1, "max_retries": 1},
        tasks=["vllm_cpp_capitals"], task_manager=TaskManager(include_path=str(task_dir), include_defaults=False),
        log_samples=True, bootstrap_iters=0)
    samples = results["samples"]["vllm_cpp_capitals"]
    assert len(samples) == len(QUESTIONS)
    right = 0
    for sample in samples:
        scored = [resp[0][0] for resp in sample["resps"]]
        assert len(scored) == len(sample["doc"]["choices"])
        expected = [engine_loglikelihood(engine, *arguments) for arguments in sample["arguments"]]
        assert scored == expected
        right += expected.index(max(expected)) == sample["doc"]["answer"]
    assert results["results"]["vllm_cpp_capitals"]["acc,none"] == right / len(QUESTIONS)
