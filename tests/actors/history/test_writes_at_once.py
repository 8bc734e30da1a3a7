"""The history store's writes at once: on a log that appends without waiting, with nobody
subscribed to the history, a commit has no ``await``; the history it writes is the same as
through the awaiting path."""

from __future__ import annotations

from typing import Any

from livecontext.actors.history import history_topic
from tests.support.agent_harness import open_agent

TURNS = [
    {"text": "editing", "tool_calls": [{"name": "notebook_replace", "arguments": {"old_text": "", "new_text": "plan"}}]},
    {"text": "done"},
    {"text": "again", "tool_calls": [{"name": "notebook_replace", "arguments": {"old_text": "plan", "new_text": "plan 2"}}]},
    {"text": "done again"},
]


async def _history(subscribed: bool) -> list[tuple[Any, ...]]:
    async with open_agent(TURNS, inputs=["first", "second"]) as h:
        if subscribed:
            async with h.rt.open_subscription(history_topic("t1"), buffer=1024):
                await h.run_until_idle()
        else:
            await h.run_until_idle()
        entries = await h.entries()
        seq = (await h.tail()).entries
    # everything but the wall-clock times
    return [(type(e).__name__, e.id, e.revision, str(e.author), e.retention, e.content,
             getattr(e, "tool_calls", None), getattr(e, "results", None)) for e in entries] + [seq]


async def test_a_thread_written_at_once_holds_the_same_history_as_one_written_with_a_subscriber() -> None:
    at_once, awaited = await _history(False), await _history(True)
    assert len(at_once) == 9  # 8 entries and their count
    assert at_once == awaited
