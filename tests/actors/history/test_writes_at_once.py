"""The history store's writes at once: on a log that appends without waiting, with nobody
subscribed to the history, a commit has no ``await`` (so the engine's writes run unshielded);
the history it writes is the same as through the awaiting path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from livecontext.actors.history import HistoryStore, history_topic
from livecontext.protocol import (
    ActorId,
    AppendInput,
    AppendOutput,
    AppendToolResults,
    PostNotification,
    ReadEntries,
    make_converter,
)
from livecontext.runtime import open_runtime
from livecontext.runtime.persistence import open_store
from livecontext.runtime.tokens import TokenCounter
from tests.actors.agent_harness import open_agent

ENGINE_WRITES = [AppendInput("hi"), AppendOutput("ok", (), "m"), AppendToolResults()]


async def _vouches(url: str, subscribed: bool) -> list[bool]:
    stores: list[HistoryStore] = []
    async with await open_store(url) as store, await store.open_thread("t", owner="t") as log:
        async with open_runtime() as rt:
            def make() -> HistoryStore:
                stores.append(HistoryStore("t", log, make_converter(), TokenCounter()))
                return stores[-1]

            await rt.spawn(make, ActorId("history", "t"))
            if not subscribed:
                return [stores[0].completes_at_once(m) for m in ENGINE_WRITES]
            async with rt.open_subscription(history_topic("t")):
                return [stores[0].completes_at_once(m) for m in ENGINE_WRITES]


async def test_on_a_memory_store_with_nobody_subscribed_the_engines_writes_complete_at_once() -> None:
    assert await _vouches("memory:", subscribed=False) == [True, True, True]


async def test_with_a_subscriber_to_tell_or_a_log_that_blocks_they_do_not(tmp_path: Path) -> None:
    assert await _vouches("memory:", subscribed=True) == [False, False, False]
    assert await _vouches(f"sqlite:{tmp_path / 'h.db'}", subscribed=False) == [False, False, False]


async def test_only_the_engines_writes_are_vouched_for() -> None:
    async with await open_store("memory:") as store, await store.open_thread("t", owner="t") as log:
        history = HistoryStore("t", log, make_converter(), TokenCounter())
        assert not history.completes_at_once(ReadEntries())
        assert not history.completes_at_once(PostNotification("note"))


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
