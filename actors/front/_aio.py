"""The front door on asyncio: :func:`open_aio_agent` and the :class:`AioAgent` it gives
(``livecontext.aio.open_agent``), whose methods are :class:`Agent`'s as asyncio coroutines and
async iterators.

The agents still run on Trio, as a guest of the running asyncio loop (the runtime's
:class:`~livecontext.runtime.InGuest`): one Trio run per loop, in the loop's own thread, shared
by every agent (and system) open in that loop, so no message hops between threads. A cancelled
:meth:`AioAgent.send`, :meth:`AioAgent.run` or :meth:`AioAgent.stream` first cancels the
agent's step in flight (:meth:`Agent.cancel`: recorded, and the engine pauses until the next
run), so nothing of it goes on behind the caller's back.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from livecontext.protocol.agent import InputMode, Rendered
from livecontext.protocol.history import ApprovalRecorded, HistoryEntry, ToolCall
from livecontext.runtime import GuestCall, InGuest, UsageError, uncancellable
from livecontext.runtime.persistence import ThreadInfo

from ._front import Agent, AgentEvent, AgentState, Reply, open_agent

T = TypeVar("T")

_AGAIN = "livecontext.aio.open_agent(...)"


@contextlib.asynccontextmanager
async def open_aio_agent(**keywords: Any) -> AsyncIterator[AioAgent]:
    """Open an agent from asyncio: ``async with livecontext.aio.open_agent(model="echo") as agent:
    print((await agent.send("hello")).text)``.

    The keywords are :func:`open_agent`'s, every one. The agent runs in the Trio guest run of
    the running asyncio loop (started if none runs), and is closed when the block ends.

    Raises:
        UsageError: no asyncio event loop runs in this thread.
        Whatever :func:`open_agent` raises, as it raises it.
    """
    agent = AioAgent(keywords)
    await agent._open()
    try:
        yield agent
    finally:
        await agent.aclose()


class AioAgent:
    """An agent for asyncio code: :class:`Agent`'s calls as coroutines (and :meth:`stream` as
    an async iterator). Made by ``livecontext.aio.open_agent``; valid inside its ``async with``,
    and in the asyncio loop that opened it only."""

    def __init__(self, keywords: Mapping[str, Any]) -> None:
        self._keywords = dict(keywords)
        self.thread = str(self._keywords.get("thread") or "main")
        self._held: InGuest[Agent] = InGuest(lambda: open_agent(**self._keywords),
                                             f"the agent of thread {self.thread}", _AGAIN)
        """The thread id."""
        self.changed: tuple[str, ...] = ()
        """As :attr:`Agent.changed`."""

    def __repr__(self) -> str:
        return f"<AioAgent of thread {self.thread!r}, {'closed' if self._held.closed else 'open'}>"

    async def send(self, text: str, *, pin: bool = False, max_steps: int | None = None,
                   cut_oversized: bool | None = None, mode: InputMode | str = InputMode.QUEUE) -> Reply:
        """Give the agent ``text`` and run it until it waits again: :meth:`Agent.send`. Cancelled,
        it cancels the agent's step in flight."""
        return await self._call(lambda agent: agent.send(text, pin=pin, max_steps=max_steps,
                                                         cut_oversized=cut_oversized, mode=mode),
                                "send", stop=_stop_the_step)

    async def run(self, *, max_steps: int | None = None) -> Reply:
        """Run until the agent waits for input or approval: :meth:`Agent.run`. Cancelled, it
        cancels the agent's step in flight."""
        return await self._call(lambda agent: agent.run(max_steps=max_steps), "run", stop=_stop_the_step)

    async def stream(self, text: str, *, pin: bool = False, max_steps: int | None = None,
                     cut_oversized: bool | None = None) -> AsyncIterator[AgentEvent | Reply]:
        """Like :meth:`send`, yielding the engine's events as they happen, then the
        :class:`Reply`: :meth:`Agent.stream`. Stopping early (``break``) does not stop the run
        (as there); the task iterating it cancelled cancels the agent's step in flight."""
        items: asyncio.Queue[AgentEvent | Reply | _End] = asyncio.Queue()

        async def pump(agent: Agent) -> None:
            events = agent.stream(text, pin=pin, max_steps=max_steps, cut_oversized=cut_oversized)
            try:
                async for item in events:
                    items.put_nowait(item)
            finally:
                items.put_nowait(_END)
                aclose = getattr(events, "aclose", None)  # (an async generator: closed here, in its task)
                if aclose is not None:
                    await aclose()

        call = self._held.start(pump, "stream", stop=_stop_the_step)
        finished = False
        try:
            while True:
                item = await items.get()
                if isinstance(item, _End):
                    break
                yield item
            finished = True
            await self._held.finish(call)
        except asyncio.CancelledError:
            if not finished:  # (the task iterating was cancelled: the step is cancelled too)
                self._held.guest.soon(call.cancel, True)
                with contextlib.suppress(BaseException):
                    await uncancellable(call.future)
            raise
        finally:
            if not call.future.done():  # (stopped early: the run goes on, as Agent.stream's)
                self._held.guest.soon(call.cancel, False)
                with contextlib.suppress(asyncio.CancelledError, UsageError):
                    await uncancellable(call.future)

    async def state(self) -> AgentState:
        """Where the thread stands, and its apps' states: :meth:`Agent.state`."""
        return await self._call(lambda agent: agent.state(), "state")

    async def history(self) -> tuple[HistoryEntry, ...]:
        """Every entry of the thread, oldest first: :meth:`Agent.history`."""
        return await self._call(lambda agent: agent.history(), "history")

    async def render(self, budget: int | None = None) -> Rendered:
        """The context the model would be sent now: :meth:`Agent.render`."""
        return await self._call(lambda agent: agent.render(budget), "render")

    async def pending_approvals(self) -> tuple[ToolCall, ...]:
        """The tool calls waiting for a person's approval: :meth:`Agent.pending_approvals`."""
        return await self._call(lambda agent: agent.pending_approvals(), "pending_approvals")

    async def approve(self, call_id: str, arguments: str | Mapping[str, Any] | None = None, *,
                      by: str = "user") -> ApprovalRecorded:
        """Approve a call waiting for approval (then :meth:`run`): :meth:`Agent.approve`."""
        return await self._call(lambda agent: agent.approve(call_id, arguments, by=by), "approve")

    async def deny(self, call_id: str, reason: str = "", *, by: str = "user") -> ApprovalRecorded:
        """Deny a call waiting for approval (then :meth:`run`): :meth:`Agent.deny`."""
        return await self._call(lambda agent: agent.deny(call_id, reason, by=by), "deny")

    async def fork(self, thread: str, *, at: int | None = None) -> ThreadInfo:
        """Copy this thread to a new thread of the same store: :meth:`Agent.fork`."""
        return await self._call(lambda agent: agent.fork(thread, at=at), "fork")

    async def pause(self) -> None:
        """Stop taking steps on its own after the current one: :meth:`Agent.pause`."""
        await self._call(lambda agent: agent.pause(), "pause")

    async def resume(self) -> None:
        """Take steps on its own again: :meth:`Agent.resume`."""
        await self._call(lambda agent: agent.resume(), "resume")

    async def cancel(self) -> None:
        """Cancel the step in flight and pause: :meth:`Agent.cancel`."""
        await self._call(lambda agent: agent.cancel(), "cancel")

    async def aclose(self) -> None:
        """Close the agent (what the ``async with`` block's end does): a call still running is
        cancelled (its caller gets a :class:`UsageError`); after the last agent of the loop,
        the guest run ends. Closing again does nothing.

        Raises:
            Whatever closing the agent raised in the guest, as it raised it.
        """
        await self._held.aclose()

    async def _open(self) -> None:
        agent = await self._held.open()
        self.thread, self.changed = agent.thread, agent.changed

    async def _call(self, function: Callable[[Agent], Awaitable[T]], name: str, *,
                    stop: Callable[[Agent, GuestCall[Agent, Any]], Awaitable[None]] | None = None) -> T:
        return await self._held.call(function, name, stop=stop)


async def _stop_the_step(agent: Agent, call: GuestCall[Agent, Any]) -> None:
    """Cancel the agent's step in flight if it is ``call``'s run: a send or run holding the
    agent's lock in its own task (a queued one waiting behind another's run is not), or a
    stream while a run holds the lock (its run is driven by a task of the agent's own nursery)."""
    owner = agent._lock.statistics().owner
    if owner is not None and (call.name == "stream" or owner is call.task):
        await agent.cancel()


class _End:
    """The end of a stream's items."""


_END = _End()
