"""A weather tool and worked hermes tool calls, shared by the chat tests of the
engine (engine/test_chat.py) and of the server (serving/)."""

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def weather_call(city):
    return '<tool_call>\n{"name": "get_weather", "arguments": {"city": "%s"}}\n</tool_call>' % city


# Two worked examples are enough for SmolLM2 to answer the third question
# with a hermes tool call of its own (greedy).
FEW_SHOT_TOOL_CALLS = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": weather_call("Paris")},
    {"role": "user", "content": "Weather in Rome?"},
    {"role": "assistant", "content": weather_call("Rome")},
    {"role": "user", "content": "Weather in London?"},
]
