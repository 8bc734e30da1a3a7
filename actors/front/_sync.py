"""The front door without ``async``: :func:`run_agent` (one question, one reply) and
:class:`SyncAgent` (:func:`open_sync_agent`), for scripts and the REPL.

The agent still runs on Trio. :func:`run_agent` runs ``trio.run`` in the calling thread; a
:class:`SyncAgent` runs its agent in a Trio run of its own, in a worker thread, and each of its
methods crosses into that run (``trio.from_thread.run`` with the run's token) and blocks the
caller until the call is done. Neither can be used inside a running event loop (asyncio's or
Trio's): it would block that loop, so both refuse in one line instead.
"""

from __future__ import annotations

import atexit
import functools
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, TypeVar

import trio

from livecontext.protocol.agent import InputMode, Rendered
from livecontext.protocol.history import ApprovalRecorded, HistoryEntry, ToolCall
from livecontext.runtime import UsageError
from livecontext.runtime.persistence import ThreadInfo

from ._front import Agent, AgentState, Reply, open_agent

T = TypeVar("T")


def run_agent(prompt: str, **keywords: Any) -> Reply:
    """Open an agent, send it ``prompt``, and return its :class:`Reply`; close it all again.

    ``print(livecontext.run_agent("hello", model="echo").text)``

    The keywords are :func:`open_agent`'s, every one (``model=``, ``tools=``, ``store=``,
    ``thread=``, ``blueprint=``, ...): with a durable ``store`` and a ``thread``, a second call
    resumes the thread the first one left. The agent runs in a Trio run of the calling thread,
    which must run no event loop (call it from a plain script, the REPL, or a worker thread).

    Raises:
        UsageError: called inside a running asyncio event loop or Trio run (nothing is opened),
            or a keyword is not usable.
        Whatever :func:`open_agent` and :meth:`Agent.send` raise, as they raise it.
    """
    refuse_inside_a_loop("run_agent")

    async def ask() -> Reply:
        async with open_agent(**keywords) as agent:
            return await agent.send(prompt)

    return trio.run(ask)


def open_sync_agent(**keywords: Any) -> SyncAgent:
    """Open an agent in a Trio run of its own, in a worker thread, and give a
    :class:`SyncAgent` whose methods block until done: ``with livecontext.open_sync_agent(model="echo")
    as agent: print(agent.send("hello").text)``.

    The keywords are :func:`open_agent`'s, every one. Give ``store`` as a URL (``sqlite:PATH``):
    an :class:`EventStore` opened in your own Trio run cannot be used from the agent's.

    Raises:
        UsageError: called inside a running asyncio event loop or Trio run (nothing is opened),
            or a keyword is not usable.
        Whatever :func:`open_agent` raises, as it raises it (the worker thread has ended).
    """
    refuse_inside_a_loop("open_sync_agent")
    agent = SyncAgent(keywords)
    agent._open()
    return agent


def refuse_inside_a_loop(what: str) -> None:
    """Raise a one-line :class:`UsageError` if an asyncio event loop or a Trio run runs in this
    thread: ``what`` would block it (or, for Trio, fail)."""
    asyncio = sys.modules.get("asyncio")  # (a program that never imported it runs no loop of it)
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise UsageError(_inside(what, "a running asyncio event loop"))
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        return
    raise UsageError(_inside(what, "a running Trio run"))


def _inside(what: str, loop: str) -> str:
    return (f"{what} was called inside {loop}, which it would block: use `await` with the async API "
            f"(livecontext.open_agent) from a Trio program, or call {what} from a plain script / a worker thread")


class SyncAgent:
    """An agent for code without ``async``: :class:`Agent`'s calls, each blocking until done.

    Made by :func:`open_sync_agent`; valid until its ``with`` block ends (or :meth:`close`).
    The agent runs in a Trio run of its own, in a worker thread named ``livecontext agent
    THREAD``; each call crosses into that run and back. An exception the call raises there is
    raised here, with its own type. A Ctrl-C while a call waits cancels the call and closes
    the agent (its thread ends) before the ``KeyboardInterrupt`` goes on. Not usable inside a
    running event loop (asyncio's or Trio's): there use :func:`open_agent` with ``await``.
    """

    def __init__(self, keywords: Mapping[str, Any]) -> None:
        self._keywords = dict(keywords)
        self._lock = threading.Lock()
        """Guards what the two threads share before the run has a token: the token, ``_abandoned``."""
        self._opened = threading.Event()
        """Set once the agent is open, or the run ended (it failed to open)."""
        self._token: trio.lowlevel.TrioToken | None = None
        self._abandoned = False
        self._closed = False
        self._agent: Agent | None = None
        self._failure: BaseException | None = None
        """What ended the run, if anything did (raised in the caller)."""
        # (the run's own state: touched only in its thread)
        self._closing: trio.Event | None = None
        self._open_scope: trio.CancelScope | None = None
        self._calls: set[_Call[Any]] = set()
        thread = str(self._keywords.get("thread") or "main")
        self._thread = threading.Thread(target=self._serve, name=f"livecontext agent {thread}", daemon=True)
        self.thread = thread
        """The thread id (the agent's thread of its store, not the worker thread it runs in)."""
        self.changed: tuple[str, ...] = ()
        """As :attr:`Agent.changed`: one line for each setting given that changes what the
        resumed thread recorded."""

    def __repr__(self) -> str:
        return f"<SyncAgent of thread {self.thread!r}, {'closed' if self._closed else 'open'}>"

    def __enter__(self) -> SyncAgent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send(self, text: str, *, pin: bool = False, max_steps: int | None = None,
             cut_oversized: bool | None = None, mode: InputMode | str = InputMode.QUEUE) -> Reply:
        """Give the agent ``text`` and run it until it waits again: :meth:`Agent.send`."""
        return self._call(Agent.send, text, pin=pin, max_steps=max_steps, cut_oversized=cut_oversized, mode=mode)

    def run(self, *, max_steps: int | None = None) -> Reply:
        """Run until the agent waits for input or approval: :meth:`Agent.run`."""
        return self._call(Agent.run, max_steps=max_steps)

    def state(self) -> AgentState:
        """Where the thread stands, and its apps' states: :meth:`Agent.state`."""
        return self._call(Agent.state)

    def history(self) -> tuple[HistoryEntry, ...]:
        """Every entry of the thread, oldest first: :meth:`Agent.history`."""
        return self._call(Agent.history)

    def render(self, budget: int | None = None) -> Rendered:
        """The context the model would be sent now: :meth:`Agent.render`."""
        return self._call(Agent.render, budget)

    def pending_approvals(self) -> tuple[ToolCall, ...]:
        """The tool calls waiting for a person's approval: :meth:`Agent.pending_approvals`."""
        return self._call(Agent.pending_approvals)

    def approve(self, call_id: str, arguments: str | Mapping[str, Any] | None = None, *,
                by: str = "user") -> ApprovalRecorded:
        """Approve a call waiting for approval (then :meth:`run`): :meth:`Agent.approve`."""
        return self._call(Agent.approve, call_id, arguments, by=by)

    def deny(self, call_id: str, reason: str = "", *, by: str = "user") -> ApprovalRecorded:
        """Deny a call waiting for approval (then :meth:`run`): :meth:`Agent.deny`."""
        return self._call(Agent.deny, call_id, reason, by=by)

    def fork(self, thread: str, *, at: int | None = None) -> ThreadInfo:
        """Copy this thread to a new thread of the same store: :meth:`Agent.fork`."""
        return self._call(Agent.fork, thread, at=at)

    def close(self) -> None:
        """Close the agent and end its thread (what the ``with`` block's end does); a call
        still running in another thread is cancelled. Closing again does nothing.

        Raises:
            Whatever closing the agent raised in its run, as it raised it.
        """
        self._end(raise_failure=True)

    # -- the caller's side

    def _open(self) -> None:
        _OPEN.add(self)
        self._thread.start()
        try:
            self._opened.wait()
        except KeyboardInterrupt:
            self._end(raise_failure=False)
            raise
        if self._agent is None:  # (it failed to open: the run has ended)
            self._end(raise_failure=True)
            return
        self.thread, self.changed = self._agent.thread, self._agent.changed  # (a blueprint may name it)
        self._thread.name = f"livecontext agent {self.thread}"

    def _call(self, method: Callable[..., Awaitable[T]], *args: Any, **keywords: Any) -> T:
        refuse_inside_a_loop(f"SyncAgent.{method.__name__}")
        if self._closed or self._token is None or self._agent is None:
            raise UsageError(f"this agent of thread {self.thread} is closed: open one again with "
                             "livecontext.open_sync_agent(...)")
        call = _Call(functools.partial(method, self._agent, *args, **keywords), method.__name__)
        try:
            return trio.from_thread.run(self._in_run, call, trio_token=self._token)
        except KeyboardInterrupt:
            self._end(raise_failure=False)  # (cancels the call)
            raise
        except (trio.RunFinishedError, trio.Cancelled):  # the run ended under the call: say why
            self._end(raise_failure=True)
            raise UsageError(f"the agent of thread {self.thread} was closed while {method.__name__} ran") from None

    def _end(self, *, raise_failure: bool) -> None:
        with self._lock:
            first = not self._closed
            self._closed = self._abandoned = True
            token = self._token
        if first and token is not None:
            try:
                token.run_sync_soon(self._close_in_run)
            except trio.RunFinishedError:
                pass  # it ended already
        if self._thread.ident is not None:  # (started: joined at once if it ended)
            self._thread.join()
        _OPEN.discard(self)
        failure, self._failure = self._failure, None
        if failure is not None and raise_failure:
            raise failure

    # -- the worker thread's side

    def _serve(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # (raised in the caller: at open, or at close)
            self._failure = exc
        finally:
            self._opened.set()

    async def _main(self) -> None:
        closing = self._closing = trio.Event()
        with self._lock:
            self._token = trio.lowlevel.current_trio_token()
            if self._abandoned:  # (Ctrl-C before the run began)
                return
        with trio.CancelScope() as self._open_scope:  # (cancelled if it closes before it opened)
            async with open_agent(**self._keywords) as agent:
                self._agent = agent
                self._opened.set()
                await closing.wait()
                for call in list(self._calls):
                    call.cancel()
                for call in list(self._calls):
                    await call.done.wait()

    def _close_in_run(self) -> None:
        # (never raises: an error of a run_sync_soon callback would end the run as Trio's own)
        if self._closing is not None:
            self._closing.set()
        if self._agent is None and self._open_scope is not None:
            self._open_scope.cancel()

    async def _in_run(self, call: _Call[T]) -> T:
        assert self._closing is not None
        if self._closing.is_set():
            raise UsageError(f"this agent of thread {self.thread} is closed: open one again with "
                             "livecontext.open_sync_agent(...)")
        self._calls.add(call)
        try:
            with trio.CancelScope() as call.scope:
                if call.cancelled:
                    call.scope.cancel()
                return await call.function()
            raise UsageError(f"the agent of thread {self.thread} was closed while {call.name} ran")
        finally:
            self._calls.discard(call)
            call.done.set()


class _Call(Generic[T]):
    """One call crossing into the agent's run (its state touched only in the run's thread)."""

    def __init__(self, function: Callable[[], Awaitable[T]], name: str) -> None:
        self.function = function
        self.name = name
        self.scope: trio.CancelScope | None = None
        self.cancelled = False
        self.done = trio.Event()

    def cancel(self) -> None:
        self.cancelled = True
        if self.scope is not None:
            self.scope.cancel()


_OPEN: weakref.WeakSet[SyncAgent] = weakref.WeakSet()
"""The sync agents open in this process. Their threads are daemons (an agent never closed must
not keep the interpreter from exiting): each one still open when it exits is closed first."""


@atexit.register
def _close_the_open_agents() -> None:
    for agent in list(_OPEN):
        agent._end(raise_failure=False)
