"""The OpenAI Agents SDK (``openai-agents``) against a tool-calling server
on SmolLM2, through its chat-completions model class: an agent with a
function tool runs several turns (the forced tool call, the tool's result
sent back, the final answer). Tracing is off: nothing leaves this machine.
(Its Responses model class: tests/serving/test_responses.py.)"""

import asyncio

import pytest

agents = pytest.importorskip(
    "agents", reason="openai-agents is not installed (the test extra installs it on Python 3.10+)")
openai = pytest.importorskip("openai")

from client_support import FORECASTS, get_weather  # noqa: E402
from server_harness import MODEL_NAME, tool_calling_server  # noqa: E402

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def base_url(smollm2_path):
    agents.set_tracing_disabled(True)
    with tool_calling_server(smollm2_path) as (_, url):
        yield url


def run_agent(base_url, streamed=False, **settings):
    """Runs the forecaster agent on one question; (the run's result, the
    cities its tool was called with)."""
    calls = []

    @agents.function_tool
    def weather(city: str) -> str:
        """Get the current weather of a city."""
        calls.append(city)
        return get_weather(city)

    async def run():
        async with openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0) as client:
            agent = agents.Agent(
                name="forecaster", instructions="Answer with the weather tool.", tools=[weather],
                model=agents.OpenAIChatCompletionsModel(model=MODEL_NAME, openai_client=client),
                # The first turn must call the tool; the SDK then resets
                # tool_choice to auto (reset_tool_choice) so the agent can answer.
                model_settings=agents.ModelSettings(tool_choice="weather", temperature=0, max_tokens=24, **settings))
            if not streamed:
                return await agents.Runner.run(agent, "What is the weather in Paris?", max_turns=4)
            result = agents.Runner.run_streamed(agent, "What is the weather in Paris?", max_turns=4)
            async for _ in result.stream_events():
                pass
            return result

    return asyncio.run(run()), calls


def check_turns(result, calls):
    assert calls and all(city in FORECASTS for city in calls)
    kinds = [item.type for item in result.new_items]
    assert kinds[:2] == ["tool_call_item", "tool_call_output_item"]
    assert kinds[-1] == "message_output_item"
    assert isinstance(result.final_output, str)
    assert len(result.raw_responses) >= 2  # one model call per turn


def test_agent_with_a_function_tool_over_several_turns(base_url):
    check_turns(*run_agent(base_url))


def test_streamed_agent_forwarding_store_and_metadata(base_url):
    """Streamed, with the settings agents written for OpenAI carry (the
    SDK forwards ``store`` and ``metadata`` into each request)."""
    result, calls = run_agent(base_url, streamed=True, store=False, metadata={"suite": "vllm-cpp"})
    assert result.is_complete
    check_turns(result, calls)
