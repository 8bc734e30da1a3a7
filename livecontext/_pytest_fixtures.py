"""The Trio fixtures of livecontext's pytest plugin (``livecontext.pytest_plugin``), registered
when pytest-trio is there.

An agent or system is an ``async with`` block, and a Trio block must end in the task that
entered it; a test's task and its fixture's are two. So each agent (system) a test opens through
``lc_agent`` (``lc_system``) is held by a task of the fixture's own nursery, which enters the
block, hands the agent over, and leaves the block when the test is over (or when the test closes
it), in order, last opened first closed.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, AsyncContextManager, Generic, TypeVar

import pytest
import trio
import trio.testing
from pytest_trio import trio_fixture  # type: ignore[import-untyped]  # (pytest-trio ships no types)

if TYPE_CHECKING:
    from livecontext.actors.front import Agent
    from livecontext.actors.system import System

T = TypeVar("T")


class Holder(Generic[T]):
    """Opens things in tasks of one nursery and closes them, newest first, at :meth:`close_all`."""

    def __init__(self, nursery: trio.Nursery, kind: str) -> None:
        self._nursery = nursery
        self._kind = kind
        self._closers: list[tuple[T, trio.Event, trio.Event]] = []

    async def open(self, opener: Callable[[], AsyncContextManager[T]]) -> T:
        close, closed = trio.Event(), trio.Event()
        value: T = await self._nursery.start(self._hold, opener, close, closed)
        self._closers.append((value, close, closed))
        return value

    async def _hold(self, opener: Callable[[], AsyncContextManager[T]], close: trio.Event, closed: trio.Event,
                    task_status: trio.TaskStatus[T] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with opener() as value:
                task_status.started(value)
                await close.wait()
        finally:
            closed.set()

    async def close(self, value: T) -> None:
        """Close ``value`` now (it was opened here), rather than after the test."""
        for held in self._closers:
            if held[0] is value:
                self._closers.remove(held)
                held[1].set()
                await held[2].wait()
                return
        raise ValueError(f"this {self._kind} was not opened by this fixture, or is closed already")

    async def close_all(self) -> None:
        while self._closers:
            await self.close(self._closers[-1][0])


def _runtime_clock(request: pytest.FixtureRequest) -> Any:
    """A :class:`~livecontext.runtime.VirtualClock` (seeded by the test's ``lc_seed``, else 0)
    when the test runs on ``lc_clock``, so that the records' stamps are virtual too; else
    ``None`` (the runtime's default, the machine's clock)."""
    if "lc_clock" not in request.fixturenames:
        return None
    from livecontext.runtime import VirtualClock

    seed = request.getfixturevalue("lc_seed") if "lc_seed" in request.fixturenames else 0
    return VirtualClock(seed=seed)


class AgentOpener:
    """What ``lc_agent`` gives: call it to open an agent for the test. In a test that runs on
    ``lc_clock``, its runtime stamps virtual times (``clock=VirtualClock(seed=lc_seed)``)."""

    def __init__(self, holder: Holder[Agent], clock: Any = None) -> None:
        self._holder = holder
        self._clock = clock

    async def __call__(self, **keywords: Any) -> Agent:
        """Open an agent with :func:`livecontext.open_agent`'s keywords (``store`` is ``memory:``
        unless given); it is closed after the test, or by :meth:`close`."""
        from livecontext.actors.front import open_agent

        keywords.setdefault("store", "memory:")
        if self._clock is not None:
            keywords.setdefault("clock", self._clock)
        return await self._holder.open(lambda: open_agent(**keywords))

    async def close(self, agent: Agent) -> None:
        """Close ``agent`` before the test ends (to open its thread again, say)."""
        await self._holder.close(agent)


class SystemOpener:
    """What ``lc_system`` gives: call it to open a system for the test.

    In a seeded test (one that takes ``lc_seed``), the system runs under a
    :class:`~livecontext.runtime.testing.SteppingScheduler` of that seed: every message between
    its actors waits until a driver task of the fixture delivers it, in an order the seed picks,
    so the seed decides how the agents' messages interleave, the same way on every run."""

    def __init__(self, holder: Holder[System], seed: int | None, stall_timeout: float, clock: Any = None) -> None:
        self._holder = holder
        self._clock = clock
        self.seed = seed
        """The seed its systems are scheduled by (``None``: live scheduling)."""
        self._stall_timeout = stall_timeout
        self.schedulers: dict[int, Any] = {}
        """The stepping scheduler of each system opened in a seeded test, by ``id(system)``
        (its ``trace`` lists the deliveries)."""

    async def __call__(self, blueprint: Any, **keywords: Any) -> System:
        """Open a system with :func:`livecontext.open_system`'s arguments (``store`` is
        ``memory:`` unless given); it is closed after the test, or by :meth:`close`."""
        from livecontext.actors.system import open_system

        keywords.setdefault("store", "memory:")
        if self._clock is not None:
            keywords.setdefault("clock", self._clock)
        if self.seed is None:
            return await self._holder.open(lambda: open_system(blueprint, **keywords))
        from livecontext.runtime.testing import SteppingScheduler

        scheduler = keywords.setdefault("scheduler", SteppingScheduler(self.seed))
        system = await self._holder.open(lambda: self._stepped(open_system(blueprint, **keywords), scheduler))
        self.schedulers[id(system)] = scheduler
        return system

    @contextlib.asynccontextmanager
    async def _stepped(self, opening: AsyncContextManager[System], scheduler: Any) -> AsyncIterator[System]:
        """``opening``, with a task stepping ``scheduler`` while it is open."""
        from livecontext.runtime.testing import drive

        closed = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: drive(scheduler, closed, stall_timeout=self._stall_timeout))
            try:
                async with opening as system:
                    yield system
            finally:
                closed.set()

    async def close(self, system: System) -> None:
        """Close ``system`` before the test ends."""
        await self._holder.close(system)


@contextlib.asynccontextmanager
async def _held(kind: str) -> AsyncIterator[Holder[Any]]:
    async with trio.open_nursery() as nursery:
        holder: Holder[Any] = Holder(nursery, kind)
        try:
            yield holder
        finally:
            with trio.CancelScope(shield=True):
                await holder.close_all()


class TrioFixtures:
    """The fixtures, as a plugin object (see the module's docstring)."""

    @pytest.fixture
    def lc_clock(self, request: pytest.FixtureRequest) -> trio.testing.MockClock:
        """A Trio ``MockClock`` for the test's run: autojump unless ``@pytest.mark.lc_clock(autojump=False)``."""
        marker = request.node.get_closest_marker("lc_clock")
        autojump = marker.kwargs.get("autojump", True) if marker is not None else True
        return trio.testing.MockClock(autojump_threshold=0) if autojump else trio.testing.MockClock()

    @trio_fixture  # type: ignore[untyped-decorator]
    async def lc_agent(self, request: pytest.FixtureRequest) -> AsyncIterator[AgentOpener]:
        """``await lc_agent(**open_agent_keywords)`` opens an agent, closed after the test."""
        async with _held("agent") as holder:
            yield AgentOpener(holder, _runtime_clock(request))

    @trio_fixture  # type: ignore[untyped-decorator]
    async def lc_system(self, request: pytest.FixtureRequest) -> AsyncIterator[SystemOpener]:
        """``await lc_system(blueprint, **open_system_keywords)`` opens a system, closed after
        the test; in a seeded test, scheduled by the seed."""
        seed = request.getfixturevalue("lc_seed") if "lc_seed" in request.fixturenames else None
        marker = request.node.get_closest_marker("lc_seeds")
        stall_timeout = marker.kwargs.get("stall_timeout", 5.0) if marker is not None else 5.0
        async with _held("system") as holder:
            yield SystemOpener(holder, seed, stall_timeout, _runtime_clock(request))


__all__ = ["AgentOpener", "SystemOpener", "TrioFixtures"]
