"""The engine says when the latest observation went into a model call cut (ObservationCut),
read off the render's spans: an input, or tool results, too large for the room."""

from __future__ import annotations

import json

import livecontext
from livecontext.protocol.agent import BeforeModelCall, ObservationCut
from livecontext.runtime.models import ScriptedModel


def long_log() -> str:
    """What a tool prints: many lines."""
    return "\n".join(f"test_{k} passed in 0.01s" for k in range(800))


async def test_tool_results_too_large_for_the_room_are_sent_cut_and_the_engine_says_so() -> None:
    model = ScriptedModel.from_turns([
        {"text": "", "tool_calls": [{"name": "long_log", "arguments": json.dumps({})}]},
        {"text": "done"},
    ])
    async with livecontext.open_agent(model=model, tools=[long_log], budget=2000, pin_task=False) as agent:
        events = [event async for event in agent.stream("run the tests")]
    cuts = [e for e in events if isinstance(e, ObservationCut)]
    assert len(cuts) == 1
    cut = cuts[0]
    assert (cut.entry_id, cut.what, cut.call_index) == ("e3", "tool results", 1)
    assert cut.sent_tokens <= 400 < cut.tokens
    calls = [e for e in events if isinstance(e, BeforeModelCall)]
    assert [s.shown.value for s in calls[1].spans if s.last == "e3"] == ["recent"]
    assert isinstance(events[-1], livecontext.Reply)
    assert events[-1].cut == (
        f"tool results e3 did not fit the context whole: sent cut to its head and tail "
        f"({cut.sent_tokens:,} of its {cut.tokens:,} tokens)",)


async def test_an_observation_sent_whole_raises_no_event() -> None:
    model = ScriptedModel.from_turns([
        {"text": "", "tool_calls": [{"name": "long_log", "arguments": json.dumps({})}]},
        {"text": "done"},
    ])
    async with livecontext.open_agent(model=model, tools=[long_log], budget=100_000) as agent:
        events = [event async for event in agent.stream("run the tests")]
    assert not [e for e in events if isinstance(e, ObservationCut)]
    assert isinstance(events[-1], livecontext.Reply) and events[-1].cut == ()
