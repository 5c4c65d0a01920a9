"""What the real-client tests (tests/serving/test_client_*.py) share: the weather
tool they call (as a plain function each client wraps its own way), the
forecasts it answers from, and the small pydantic model they ask for as
structured output."""

from pydantic import BaseModel, Field

FORECASTS = {"Paris": "sunny, 21 C", "Rome": "cloudy, 18 C", "London": "rain, 12 C"}


def get_weather(city: str) -> str:
    """Get the current weather of a city."""
    return FORECASTS.get(city.strip(), "unknown")


class City(BaseModel):
    """A city and the country it is in (bounded strings, so greedy decoding
    of a 135M model ends well inside a small max_tokens)."""

    name: str = Field(max_length=20)
    country: str = Field(max_length=20)
