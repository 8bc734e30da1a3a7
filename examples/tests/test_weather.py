"""A user's test of an agent: its model's answers come from a committed cassette, so the test
runs offline, with no API key, in CI; `pytest --lc-record` records them again from the real
model (set OPENAI_API_KEY, and OPENAI_BASE_URL for another OpenAI-compatible server)."""

from pathlib import Path

from livecontext.protocol.history import ToolResultsEntry

import weather

CASSETTE = Path(__file__).parent / "cassettes" / "weather.json"
MODEL = f"cassette:{CASSETTE}:openai:gpt-4o-mini"


async def test_the_desk_answers_from_its_forecast_tool(lc_agent):
    agent = await lc_agent(model=MODEL, tools=[weather.forecast], system=weather.SYSTEM)
    reply = await agent.send("Will it be warm in Lisbon tomorrow?")
    assert reply.reason == "no_input", reply.reason  # (a cassette miss would say failed: ...)
    assert "24" in reply.text
    (results,) = [e for e in await agent.history() if isinstance(e, ToolResultsEntry)]
    assert [(r.name, r.content.live.text) for r in results.results] == [("forecast", "sunny, 24 C")]
