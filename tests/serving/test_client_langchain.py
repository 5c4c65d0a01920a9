"""LangChain's ``ChatOpenAI`` (langchain-openai) against a tool-calling
server on SmolLM2: invoke, stream, a ``bind_tools`` round trip (the
AIMessage with tool_calls and a ToolMessage sent back), and
``with_structured_output`` in its json_schema and function_calling modes."""

import pytest

langchain_openai = pytest.importorskip(
    "langchain_openai", reason="langchain-openai is not installed (the test extra installs it on Python 3.11+)")
pytest.importorskip("langchain_core")

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from client_support import City, get_weather  # noqa: E402
from server_harness import MODEL_NAME, tool_calling_server  # noqa: E402

pytestmark = pytest.mark.timeout(300)

weather_tool = tool(get_weather)


@pytest.fixture(scope="module")
def base_url(smollm2_path):
    with tool_calling_server(smollm2_path) as (_, url):
        yield url


def chat_model(base_url, max_tokens):
    return langchain_openai.ChatOpenAI(base_url=base_url + "/v1", api_key="unused", model=MODEL_NAME,
                                       temperature=0, max_tokens=max_tokens, max_retries=0)


def test_invoke_and_stream_agree(base_url):
    llm = chat_model(base_url, 12)
    answer = llm.invoke("What is the capital of France?")
    assert isinstance(answer, AIMessage) and answer.content
    assert answer.usage_metadata["output_tokens"] <= 12
    chunks = list(llm.stream("What is the capital of France?"))
    assert len(chunks) > 1
    assert "".join(chunk.content for chunk in chunks) == answer.content


def test_bind_tools_round_trip(base_url):
    llm = chat_model(base_url, 24)
    question = HumanMessage("What is the weather in Paris?")
    call_message = llm.bind_tools([weather_tool], tool_choice="get_weather").invoke([question])
    assert isinstance(call_message, AIMessage)
    [call] = call_message.tool_calls
    assert call["name"] == "get_weather" and isinstance(call["args"].get("city"), str)

    result = weather_tool.invoke(call)  # a ToolMessage answering the call's id
    assert isinstance(result, ToolMessage) and result.tool_call_id == call["id"]
    answer = llm.bind_tools([weather_tool]).invoke([question, call_message, result])
    assert isinstance(answer, AIMessage) and not answer.tool_calls
    assert isinstance(answer.content, str)


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
def test_with_structured_output(base_url, method):
    structured = chat_model(base_url, 48).with_structured_output(City, method=method)
    city = structured.invoke("Which city is the capital of France?")
    assert isinstance(city, City)
    assert len(city.name) <= 20 and len(city.country) <= 20
