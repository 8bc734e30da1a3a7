"""The agent under test: a weather desk with one tool (what your project's code would be)."""

import livecontext

SYSTEM = "You are a weather desk. Answer in one sentence, from the forecast tool only."

FORECASTS = {"lisbon": "sunny, 24 C", "oslo": "snow, -3 C"}


@livecontext.tool
def forecast(city: str) -> str:
    """Tomorrow's forecast for a city.

    Args:
        city: The city's name.
    """
    return FORECASTS.get(city.lower(), f"no forecast for {city}")
