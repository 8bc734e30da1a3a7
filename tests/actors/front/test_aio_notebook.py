"""``livecontext.aio.start_agent``: an asyncio agent opened without an ``async with``, as a
notebook's cells need it (each cell a separate piece of code run in the same loop); a cell run
again replaces its agent."""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path

import pytest

import livecontext.aio
from livecontext.protocol.history import ModelInputEntry
from livecontext.runtime import UsageError


def test_an_agent_started_in_one_task_is_used_by_later_ones_until_closed(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'nb.db'}"

    async def main() -> None:
        loop = asyncio.get_running_loop()
        # (each "cell" its own task, as a kernel runs them: nothing holds a block open between them)
        agent = await loop.create_task(livecontext.aio.start_agent(model="echo", store=store, thread="chat"))
        assert (await loop.create_task(agent.send("one"))).text == "echo: one"
        streamed = await loop.create_task(_collect(agent.stream("two")))
        assert streamed[-1].text == "echo: two"
        await agent.aclose()
        with pytest.raises(UsageError, match=r"^the agent of thread chat is closed"):
            await agent.send("three")
        again = await livecontext.aio.start_agent(store=store, thread="chat")  # resumed from the store
        assert [e.text for e in await again.history() if isinstance(e, ModelInputEntry)] == ["one", "two"]
        await again.aclose()

    asyncio.run(main())


async def _collect(stream: object) -> list[livecontext.Reply]:
    return [item async for item in stream]  # type: ignore[attr-defined]


def test_starting_an_agent_again_on_the_same_store_and_thread_closes_the_one_started_before(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'nb.db'}"

    async def main() -> None:
        first = await livecontext.aio.start_agent(model="echo", store=store, thread="chat")
        await first.send("one")
        second = await livecontext.aio.start_agent(model="echo", store=store, thread="chat")  # the cell, run again
        with pytest.raises(UsageError, match=r"^the agent of thread chat is closed"):
            await first.send("lost")
        assert (await second.send("two")).text == "echo: two"
        other = await livecontext.aio.start_agent(model="echo", store=store, thread="other")  # another thread
        assert (await second.send("three")).text == "echo: three"  # left open
        await other.aclose()
        await second.aclose()

    asyncio.run(main())


def test_an_agent_started_in_a_loop_does_not_keep_the_loop_alive_once_closed(tmp_path: Path) -> None:
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def main() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        agent = await livecontext.aio.start_agent(model="echo", store=f"sqlite:{tmp_path / 'nb.db'}", thread="t")
        await agent.send("hi")
        await agent.aclose()

    asyncio.run(main())
    gc.collect()
    assert loops[0]() is None


def test_start_agent_refuses_without_a_running_asyncio_loop() -> None:
    coroutine = livecontext.aio.start_agent(model="echo")
    with pytest.raises(UsageError, match=r"^livecontext.aio.start_agent needs a running asyncio event loop"):
        coroutine.send(None)
