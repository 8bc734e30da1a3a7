"""The front door on asyncio: :func:`open_aio_agent` and the :class:`AioAgent` it gives
(``livecontext.aio.open_agent``), whose methods are :class:`Agent`'s as asyncio coroutines and
async iterators.

The agents still run on Trio, as a guest of the running asyncio loop
(``trio.lowlevel.start_guest_run``): one Trio run per loop, in the loop's own thread, shared by
every agent open in that loop, so no message hops between threads. The guest starts with the
first agent opened in a loop and ends when the last one open in it closes (a later agent starts
a new one). Its main task owns a nursery; each call from asyncio is a task there, in a cancel
scope of its own, and completes an ``asyncio.Future``:

- the Trio call's result is the asyncio caller's; an exception it raises is raised in the
  caller, the same object (its own type);
- an asyncio caller cancelled cancels its call's scope and waits until the call is over; a
  cancelled :meth:`AioAgent.send`, :meth:`AioAgent.run` or :meth:`AioAgent.stream` first
  cancels the agent's step in flight (:meth:`Agent.cancel`: recorded, and the engine pauses
  until the next run), so nothing of it goes on behind the caller's back.

Opening an agent happens inside the guest: a task of its nursery enters :func:`open_agent`'s
``async with`` and holds it until the agent is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Generic, TypeVar

import trio

from livecontext.protocol.agent import InputMode, Rendered
from livecontext.protocol.history import ApprovalRecorded, HistoryEntry, ToolCall
from livecontext.runtime import UsageError
from livecontext.runtime.persistence import ThreadInfo

from ._front import Agent, AgentEvent, AgentState, Reply, open_agent

T = TypeVar("T")

_log = logging.getLogger("livecontext")


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
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise UsageError("livecontext.aio.open_agent needs a running asyncio event loop: use it inside "
                         "`async def` run by asyncio.run(...), or use livecontext.open_sync_agent from plain code") from None
    guest = await _guest_of(loop)
    agent = AioAgent(guest, keywords)
    try:
        await agent._open()
    except BaseException:
        await guest.release()
        raise
    try:
        yield agent
    finally:
        await agent.aclose()


class AioAgent:
    """An agent for asyncio code: :class:`Agent`'s calls as coroutines (and :meth:`stream` as
    an async iterator). Made by ``livecontext.aio.open_agent``; valid inside its ``async with``,
    and in the asyncio loop that opened it only."""

    def __init__(self, guest: _Guest, keywords: Mapping[str, Any]) -> None:
        self._guest = guest
        self._keywords = dict(keywords)
        self._agent: Agent | None = None
        self._closed = False
        # (the guest's side: touched only in the Trio run)
        self._closing: trio.Event | None = None
        self._calls: set[_Call[Any]] = set()
        self._holder_done: asyncio.Future[None] | None = None
        self._open_scope: trio.CancelScope | None = None
        self.thread = str(self._keywords.get("thread") or "main")
        """The thread id."""
        self.changed: tuple[str, ...] = ()
        """As :attr:`Agent.changed`."""

    def __repr__(self) -> str:
        return f"<AioAgent of thread {self.thread!r}, {'closed' if self._closed else 'open'}>"

    async def send(self, text: str, *, pin: bool = False, max_steps: int | None = None,
                   cut_oversized: bool | None = None, mode: InputMode | str = InputMode.QUEUE) -> Reply:
        """Give the agent ``text`` and run it until it waits again: :meth:`Agent.send`. Cancelled,
        it cancels the agent's step in flight."""
        return await self._call(lambda agent: agent.send(text, pin=pin, max_steps=max_steps,
                                                         cut_oversized=cut_oversized, mode=mode),
                                "send", stops_the_step=True)

    async def run(self, *, max_steps: int | None = None) -> Reply:
        """Run until the agent waits for input or approval: :meth:`Agent.run`. Cancelled, it
        cancels the agent's step in flight."""
        return await self._call(lambda agent: agent.run(max_steps=max_steps), "run", stops_the_step=True)

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

        call = self._start(pump, "stream", stops_the_step=True)
        finished = False
        try:
            while True:
                item = await items.get()
                if isinstance(item, _End):
                    break
                yield item
            finished = True
            await self._finish(call)
        except asyncio.CancelledError:
            if not finished:  # (the task iterating was cancelled: the step is cancelled too)
                self._guest.soon(call.cancel, True)
                with contextlib.suppress(BaseException):
                    await _uncancellable(call.future)
            raise
        finally:
            if not call.future.done():  # (stopped early: the run goes on, as Agent.stream's)
                self._guest.soon(call.cancel, False)
                with contextlib.suppress(asyncio.CancelledError, UsageError):
                    await _uncancellable(call.future)

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
        if self._closed:
            return
        self._closed = True
        done = self._holder_done
        if done is None:
            return
        self._guest.soon(self._close_in_guest)
        try:
            await _uncancellable(done)
        finally:
            await self._guest.release()

    # -- the asyncio side

    async def _open(self) -> None:
        opened: asyncio.Future[Agent] = self._guest.watch(self._guest.loop.create_future())
        self._holder_done = self._guest.watch(self._guest.loop.create_future())
        self._guest.soon(self._guest.start_soon, self._hold, opened)
        try:
            agent = await asyncio.shield(opened)
        except asyncio.CancelledError:
            self._closed = True
            self._guest.soon(self._close_in_guest)
            await _uncancellable(self._holder_done)
            raise
        except BaseException:
            self._closed = True
            await _uncancellable(self._holder_done)
            raise
        self.thread, self.changed = agent.thread, agent.changed

    async def _call(self, function: Callable[[Agent], Awaitable[T]], name: str, *,
                    stops_the_step: bool = False) -> T:
        return await self._finish(self._start(function, name, stops_the_step=stops_the_step))

    def _start(self, function: Callable[[Agent], Awaitable[T]], name: str, *, stops_the_step: bool) -> _Call[T]:
        if self._closed or self._agent is None:
            raise UsageError(f"this agent of thread {self.thread} is closed: open one again with "
                             "livecontext.aio.open_agent(...)")
        if asyncio.get_running_loop() is not self._guest.loop:
            raise UsageError(f"AioAgent.{name} was called from another asyncio loop than the one that opened "
                             "the agent: use an agent only in the loop that opened it")
        call = _Call(function, name, stops_the_step, self._guest.watch(self._guest.loop.create_future()))
        self._guest.soon(self._guest.start_soon, self._serve, call)
        return call

    async def _finish(self, call: _Call[T]) -> T:
        try:
            return await asyncio.shield(call.future)
        except asyncio.CancelledError:
            if not call.future.done():
                self._guest.soon(call.cancel, True)
                with contextlib.suppress(BaseException):
                    await _uncancellable(call.future)
            if not call.future.cancelled():
                call.future.exception()  # (its outcome is not the cancelled caller's: read, so not reported)
            raise

    # -- the guest's side (Trio)

    async def _hold(self, opened: asyncio.Future[Agent]) -> None:
        assert self._holder_done is not None
        self._closing = trio.Event()
        try:
            with trio.CancelScope() as scope:
                self._open_scope = scope
                if self._closed:
                    scope.cancel()
                async with open_agent(**self._keywords) as agent:
                    self._agent = agent
                    _resolve(opened, agent)
                    await self._closing.wait()
                    for call in list(self._calls):
                        call.cancel(False)
                    for call in list(self._calls):
                        await call.done.wait()
            if not opened.done():
                opened.set_exception(asyncio.CancelledError())
        except Exception as exc:
            if not opened.done():
                opened.set_exception(exc)
                _resolve(self._holder_done, None)
            else:
                self._holder_done.set_exception(exc)
        else:
            _resolve(self._holder_done, None)
        finally:
            self._agent = None

    def _close_in_guest(self) -> None:
        if self._closing is not None:
            self._closing.set()
        if self._agent is None and self._open_scope is not None:
            self._open_scope.cancel()

    async def _serve(self, call: _Call[T]) -> None:
        agent = self._agent
        if agent is None or (self._closing is not None and self._closing.is_set()):
            _fail(call.future, UsageError(f"this agent of thread {self.thread} is closed: open one again with "
                                          "livecontext.aio.open_agent(...)"))
            call.done.set()
            return
        self._calls.add(call)
        ended = False
        try:
            async with trio.open_nursery() as nursery:
                call.scope = nursery.cancel_scope

                async def body() -> None:
                    nonlocal ended
                    call.task = trio.lowlevel.current_task()
                    try:
                        result = await call.function(agent)
                    except Exception as exc:
                        ended = True
                        _fail(call.future, exc)
                    else:
                        ended = True
                        _resolve(call.future, result)
                    nursery.cancel_scope.cancel()

                nursery.start_soon(body)
                await call.cancel_asked.wait()
                if call.stop_the_step and not ended and _runs_the_step(agent, call):
                    with trio.CancelScope(shield=True):
                        try:
                            await agent.cancel()
                        except Exception:
                            _log.warning("cancelling the step of thread %s for a cancelled asyncio caller failed",
                                         self.thread, exc_info=True)
                nursery.cancel_scope.cancel()
        finally:
            self._calls.discard(call)
            if not call.future.done():
                if call.by_caller:
                    call.future.set_exception(asyncio.CancelledError())
                else:
                    _fail(call.future, UsageError(f"the agent of thread {self.thread} was closed while "
                                                  f"{call.name} ran"))
            call.done.set()


def _runs_the_step(agent: Agent, call: _Call[Any]) -> bool:
    """Whether the agent's run in progress is ``call``'s: a send or run holding the agent's
    lock in its own task (a queued one waiting behind another's run is not), or a stream while
    a run holds the lock (its run is driven by a task of the agent's own nursery)."""
    owner = agent._lock.statistics().owner
    if owner is None:
        return False
    return call.name == "stream" or owner is call.task


class _End:
    """The end of a stream's items."""


_END = _End()


class _Call(Generic[T]):
    """One call crossing from asyncio into the guest (its Trio state touched only in the guest)."""

    def __init__(self, function: Callable[[Agent], Awaitable[T]], name: str, stops_the_step: bool,
                 future: asyncio.Future[T]) -> None:
        self.function = function
        self.name = name
        self.stops_the_step = stops_the_step
        self.future = future
        self.scope: trio.CancelScope | None = None
        self.cancel_asked = trio.Event()
        self.stop_the_step = False
        self.by_caller = False
        self.task: trio.lowlevel.Task | None = None
        self.done = trio.Event()

    def cancel(self, by_caller: bool) -> None:
        """Cancel the call (run in the guest): ``by_caller``, its asyncio caller was cancelled
        (a call that runs the agent stops its step too); else the agent is closing, or a
        stream's reader stopped early."""
        self.by_caller = by_caller
        self.stop_the_step = self.stops_the_step if by_caller else False
        self.cancel_asked.set()


class _Guest:
    """The Trio guest run of one asyncio loop, shared by the agents open in it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.started: asyncio.Future[None] = loop.create_future()
        self.finished: asyncio.Future[None] = loop.create_future()
        self.users = 0
        self.token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._ending: trio.Event | None = None
        self._waiting: set[asyncio.Future[Any]] = set()
        """The futures of calls and openings not done yet: failed if the run ends under them."""

    def watch(self, future: asyncio.Future[T]) -> asyncio.Future[T]:
        """Fail ``future`` if the run ends before it is done (a crash of the guest: no caller
        waits forever)."""
        self._waiting.add(future)
        future.add_done_callback(self._waiting.discard)
        return future

    def begin(self) -> None:
        trio.lowlevel.start_guest_run(
            self._main,
            run_sync_soon_threadsafe=self.loop.call_soon_threadsafe,
            run_sync_soon_not_threadsafe=self.loop.call_soon,
            done_callback=self._done,
            host_uses_signal_set_wakeup_fd=True,
        )

    async def _main(self) -> None:
        self._ending = trio.Event()
        self.token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            _resolve(self.started, None)
            await self._ending.wait()
            # (every agent closed: their calls and holders are over; nothing is left to cancel)

    def _done(self, outcome: Any) -> None:
        for registry in (_GUESTS, _ENDING):  # (a guest holds its loop: kept, it would keep the loop alive)
            if registry.get(self.loop) is self:
                del registry[self.loop]
        try:
            outcome.unwrap()
        except BaseException as exc:  # (raised to whoever waits for the start or the end)
            _fail(self.started, exc)
            _fail(self.finished, exc)
            error = f"the Trio guest run of this asyncio loop failed ({type(exc).__name__}: {exc})"
        else:
            _fail(self.started, UsageError("the Trio guest run ended before it started"))
            _resolve(self.finished, None)
            error = "the Trio guest run of this asyncio loop ended"
        for future in list(self._waiting):
            _fail(future, UsageError(f"{error} under a call: open the agent again"))

    def soon(self, function: Callable[..., object], *args: Any) -> None:
        """Run ``function(*args)`` in the guest, soon (from the loop's thread)."""
        assert self.token is not None
        try:
            self.token.run_sync_soon(function, *args)
        except trio.RunFinishedError:
            raise UsageError("the Trio guest run of this asyncio loop has ended: open the agent again") from None

    def start_soon(self, function: Callable[..., Awaitable[object]], *args: Any) -> None:
        """(In the guest) start a task in the main task's nursery."""
        assert self._nursery is not None
        self._nursery.start_soon(function, *args)

    async def release(self) -> None:
        """One agent fewer; after the last, end the run and wait until it ended."""
        self.users -= 1
        if self.users > 0 or self.finished.done():
            return
        if _GUESTS.get(self.loop) is self:
            del _GUESTS[self.loop]  # (an agent opened from now on starts a new run, once this one ended)
        self.soon(self._end)
        with contextlib.suppress(Exception):  # (its failure was raised to an agent's caller already)
            await _uncancellable(self.finished)

    def _end(self) -> None:
        assert self._ending is not None
        self._ending.set()


_GUESTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Guest] = weakref.WeakKeyDictionary()
"""The guest run of each asyncio loop that has one (while an agent is open in it)."""

_ENDING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Guest] = weakref.WeakKeyDictionary()
"""The guest run of each loop until it has ended (a new one waits for it to end first)."""


async def _guest_of(loop: asyncio.AbstractEventLoop) -> _Guest:
    """The loop's guest run, started if none runs (one agent more uses it)."""
    while True:
        guest = _GUESTS.get(loop)
        if guest is None:
            ending = _ENDING.get(loop)
            if ending is not None and not ending.finished.done():
                with contextlib.suppress(Exception):
                    await asyncio.shield(ending.finished)  # (one guest run per thread at a time)
                continue
            guest = _GUESTS[loop] = _ENDING[loop] = _Guest(loop)
            guest.begin()
        guest.users += 1
        try:
            await asyncio.shield(guest.started)
        except BaseException:
            await guest.release()
            raise
        return guest


async def _uncancellable(future: asyncio.Future[T]) -> T:
    """Wait for ``future`` to be done even if the waiting task is cancelled meanwhile; then
    raise that cancellation (the future's outcome read), else give the future's outcome."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            cancelled = cancelled or not future.done()
        except BaseException:
            pass  # (done: its outcome is given below)
    if cancelled:
        if not future.cancelled():
            future.exception()
        raise asyncio.CancelledError()
    return future.result()


def _resolve(future: asyncio.Future[T], value: T) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
