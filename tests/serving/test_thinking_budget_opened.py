"""``thinking_token_budget`` for a reasoning section the model opens itself
(the glm45, mistral and granite dialects: the opening marker is generated,
not in the prompt). SmolLM2, shown worked turns that open with the
dialect's marker, opens its own answer with it and thinks on; the engine
counts the budget from the generated marker and then forces the end
marker, after which the answer is content. Greedy, so the budgeted
reasoning is the free reasoning's own start; streamed equals blocking."""

import pytest

openai = pytest.importorskip("openai", reason="the openai SDK is not installed (pip install openai)")

from server_harness import MODEL_NAME, running_server  # noqa: E402

pytestmark = pytest.mark.timeout(300)

MAX_MODEL_LEN = 1024
BUDGET = 5
#: Each dialect's opening and closing markers, as the model writes them.
DIALECTS = {"glm45": ("<think>", "</think>"), "mistral": ("[THINK]", "[/THINK]"),
            "granite": ("Here is my thought process:", "Here is my response:")}
QUESTIONS = [("What is 2 + 2?", "2 + 2 is 4.", "4"), ("What colour is the sky?", "The sky looks blue by day.", "Blue"),
             ("What is the capital of Italy?", "Italy's capital is Rome.", "Rome")]


def few_shot(dialect):
    """Worked turns whose answers open with the dialect's reasoning, then the question."""
    open_marker, close_marker = DIALECTS[dialect]
    messages = []
    for question, thought, answer in QUESTIONS:
        messages.append({"role": "user", "content": question})
        messages.append({"role": "assistant", "content": "%s %s Let me think it over once more, step by step, "
                                                         "before I answer. %s %s" % (open_marker, thought,
                                                                                     close_marker, answer)})
    messages.append({"role": "user", "content": "What is the largest ocean on Earth?"})
    return messages


@pytest.fixture(scope="module", params=sorted(DIALECTS))
def dialect_client(request, smollm2_path):
    from vllm_cpp import Engine

    with Engine.load(smollm2_path, max_model_len=MAX_MODEL_LEN, reasoning_parser=request.param) as engine:
        with running_server(engine, max_model_len=MAX_MODEL_LEN) as url:
            yield request.param, openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)


def ask(client, dialect, stream=False, **extra):
    return client.chat.completions.create(model=MODEL_NAME, messages=few_shot(dialect), max_tokens=80,
                                          temperature=0, stream=stream, extra_body=extra)


def reasoning_of(message):
    return (message.model_extra or {}).get("reasoning_content") or ""


def test_the_budget_counts_from_the_generated_marker(dialect_client):
    dialect, client = dialect_client
    free = ask(client, dialect).choices[0].message
    if len(reasoning_of(free).split()) <= BUDGET:
        pytest.skip("SmolLM2 did not think past the budget in the %s dialect here: %r" % (dialect, free))
    budgeted = ask(client, dialect, thinking_token_budget=BUDGET)
    message = budgeted.choices[0].message
    reasoning = reasoning_of(message)
    # The reasoning the budget let through is the free reasoning's start, cut short by the forced end marker.
    assert reasoning and len(reasoning) < len(reasoning_of(free))
    assert reasoning_of(free).startswith(reasoning.rstrip())
    assert message.content and message.content != free.content  # the answer after the forced marker

    # Streaming gives the same reasoning and content.
    reasoning_streamed, content_streamed = "", ""
    for chunk in ask(client, dialect, stream=True, thinking_token_budget=BUDGET):
        if chunk.choices:
            delta = chunk.choices[0].delta
            reasoning_streamed += (delta.model_extra or {}).get("reasoning_content") or ""
            content_streamed += delta.content or ""
    assert (reasoning_streamed, content_streamed) == (reasoning, message.content)


def test_a_zero_budget_ends_the_section_at_once(dialect_client):
    dialect, client = dialect_client
    message = ask(client, dialect, thinking_token_budget=0).choices[0].message
    assert not reasoning_of(message).strip() and message.content
