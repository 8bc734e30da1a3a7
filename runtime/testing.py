"""Helpers for testing actor systems: seeded stepping runs and seed exploration.

Typical use, in a pytest-trio test::

    async def scenario(rt: Runtime) -> int:
        ref = await rt.spawn(Counter, "counter/c")
        client = rt.client("test")
        await client.tell(ref, Add(1))
        return await client.ask(ref, Get())

    async def test_counter_is_the_same_under_every_interleaving() -> None:
        report = await explore(scenario, seeds=range(100), check=lambda total: total == 1)
        report.raise_on_failure()

The scenario runs inside a runtime driven by a :class:`SteppingScheduler`: every envelope
waits until the driver delivers it, in an order picked by the seed. ``report.first_failure``
names the first failing seed; :func:`run_seed` replays it exactly.

:func:`actor_instance` hands a test the actor object behind a ref, to read what the actor
noted or to swap a collaborator; code that runs actors talks to them by messages only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any, Generic, TypeVar

import trio
from attrs import frozen

from ._cell import Behaviour
from ._clock import WALL_CLOCK, RuntimeClock
from ._errors import LivecontextError
from ._open import open_runtime
from ._runtime import ActorRef, Runtime
from ._stepping import Delivery, StallError, SteppingScheduler, _Quiet

T = TypeVar("T")
A = TypeVar("A", bound=Behaviour)
Scenario = Callable[[Runtime], Awaitable[T]]
"""A test scenario: an async function that drives a runtime and returns what a check inspects."""


class SeedFailedError(LivecontextError, AssertionError):
    """A scenario failed (raised, stalled or failed its check) under one seed; replay it with that seed."""

    def __init__(self, seed: int, reason: str) -> None:
        self.seed = seed
        self.reason = reason
        super().__init__(f"seed {seed} failed: {reason} (replay with run_seed(scenario, {seed}))")


@frozen
class SeedRun(Generic[T]):
    """What one seeded run delivered and returned."""

    seed: int
    trace: tuple[Delivery, ...]
    result: T | None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        """Whether the scenario returned without raising."""
        return self.error is None


@frozen
class Exploration(Generic[T]):
    """The runs of :func:`explore`."""

    runs: tuple[SeedRun[T], ...]
    first_failure: SeedFailedError | None

    @property
    def distinct_traces(self) -> int:
        """How many different delivery orders the seeds produced."""
        return len({r.trace for r in self.runs})

    def raise_on_failure(self) -> None:
        """Raise the first failure (a :class:`SeedFailedError` naming the seed), if any."""
        if self.first_failure is not None:
            raise self.first_failure


def actor_instance(ref: ActorRef[A]) -> A:
    """The actor object behind ``ref``, for tests only: from the moment ``rt.spawn`` returns
    (a restart makes a new one; a stopped actor keeps its last)."""
    return ref._cell.instance  # type: ignore[return-value]  # (set before spawn returns)


@asynccontextmanager
async def open_stepping_runtime(
    seed: int, **kwargs: Any
) -> AsyncIterator[tuple[Runtime, SteppingScheduler]]:
    """A runtime driven by a new :class:`SteppingScheduler`; yields ``(runtime, scheduler)``.

    Nothing is delivered until you call ``scheduler.step()`` (or ``run_until_idle()``);
    ``kwargs`` go to :func:`open_runtime` (``clock=VirtualClock(seed=seed)`` for stamps and
    ids that are the same from run to run). Time is the caller's Trio run's (see
    :func:`run_seed`).
    """
    scheduler = SteppingScheduler(seed)
    async with open_runtime(scheduler=scheduler, **kwargs) as rt:
        yield rt, scheduler


async def run_seed(scenario: Scenario[T], seed: int, *, max_steps: int = 100_000,
                   stall_timeout: float = 2.0, clock: RuntimeClock = WALL_CLOCK) -> SeedRun[T]:
    """Run ``scenario`` once under ``seed``, stepping until it returns.

    Errors raised by the scenario are caught and returned in :attr:`SeedRun.error`. A run
    in which nothing happens for ``stall_timeout`` seconds fails with :class:`StallError`: a
    deadlock. Something happens when an envelope is delivered, a handler finishes, or a
    deadline passes (a sleep ends, a timeout fires: a model's latency, a tool's delay, a
    retry's backoff), so a wait shorter than ``stall_timeout`` is never taken for a stall,
    and one longer is (raise it above the longest single wait of your scenario).

    Time is the Trio run's: the caller's ``trio.run(..., clock=...)`` or pytest-trio's
    ``autojump_clock`` decides. Under a ``trio.testing.MockClock`` that autojumps, every wait
    passes at once and ``stall_timeout`` is in virtual seconds (a generous one costs
    nothing); the driver then lets time pass straight to the next deadline. ``clock`` is the
    runtime's (see :func:`open_runtime`): a :class:`~livecontext.runtime.VirtualClock` makes the envelopes' stamps
    and ids the same from run to run.
    """
    result: list[T] = []
    errors: list[BaseException] = []
    trace: tuple[Delivery, ...] = ()
    try:
        async with open_stepping_runtime(seed, clock=clock) as (rt, scheduler):
            try:
                result, errors = await _stepped(scheduler, lambda: scenario(rt), max_steps, stall_timeout)
            finally:
                trace = tuple(scheduler.trace)
    except Exception as exc:
        errors.append(_unwrap(exc))
    return SeedRun(seed, trace, result[0] if result else None, errors[0] if errors else None)


async def run_stepping(body: Callable[[SteppingScheduler], Awaitable[T]], seed: int, *,
                       max_steps: int = 100_000, stall_timeout: float = 2.0) -> SeedRun[T]:
    """Run ``body(scheduler)`` once under a new ``SteppingScheduler(seed)``, stepping it until
    ``body`` returns: :func:`run_seed` for code that opens its runtime itself
    (``open_system(..., scheduler=scheduler)``). A scheduler whose runtime closed drives the
    next one opened on it, so ``body`` may open one runtime after another (a system stopped
    and opened again); the trace goes on across them.

    Errors, stalls and the step limit are reported as by :func:`run_seed`.
    """
    scheduler = SteppingScheduler(seed)
    result: list[T] = []
    errors: list[BaseException] = []
    try:
        result, errors = await _stepped(scheduler, lambda: body(scheduler), max_steps, stall_timeout)
    except Exception as exc:
        errors.append(_unwrap(exc))
    return SeedRun(seed, tuple(scheduler.trace), result[0] if result else None, errors[0] if errors else None)


async def _stepped(scheduler: SteppingScheduler, work: Callable[[], Awaitable[T]], max_steps: int,
                   stall_timeout: float) -> tuple[list[T], list[BaseException]]:
    """Run ``work()`` while stepping ``scheduler`` until it returns; its result (a list of
    one, or none) and the errors: its own, a stall, the step limit."""
    result: list[T] = []
    errors: list[BaseException] = []
    done = trio.Event()

    async def run() -> None:
        try:
            result.append(await work())
        except Exception as exc:
            errors.append(_unwrap(exc))
        finally:
            done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        try:
            await _drive(scheduler, done, max_steps, stall_timeout)
        except (StallError, RuntimeError) as exc:
            errors.append(exc)  # kept out of the nursery: no exception group
        nursery.cancel_scope.cancel()
    return result, errors


async def drive(scheduler: SteppingScheduler, until: trio.Event, *, max_steps: int = 100_000,
                stall_timeout: float = 2.0) -> None:
    """Step ``scheduler`` until ``until`` is set: what :func:`run_seed` does around its
    scenario, for code that holds a stepped runtime open across calls of its own (the pytest
    plugin's ``lc_system`` for a seeded test).

    Raises:
        StallError: nothing was deliverable (or a handler ran) for ``stall_timeout`` seconds
            while ``until`` was not set: a deadlock, or a wait for something outside the runtime.
        RuntimeError: more than ``max_steps`` deliveries.
    """
    await _drive(scheduler, until, max_steps, stall_timeout)


def _unwrap(exc: BaseException) -> BaseException:
    """The single error inside (nested) exception groups of one error, else ``exc`` itself."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def _drive(scheduler: SteppingScheduler, done: trio.Event, max_steps: int,
                 stall_timeout: float) -> None:
    steps = 0
    quiet = _Quiet(stall_timeout)
    while not done.is_set():
        delivered = await scheduler._step(quiet)
        if delivered is not None:
            steps += 1
            if steps > max_steps:
                raise RuntimeError(f"scenario still running after {max_steps} steps")
            continue
        if done.is_set():
            break
        if not await quiet.wait(0.001):
            raise StallError(
                f"nothing to deliver for {stall_timeout:g} s and the scenario has not finished: "
                f"a deadlock, or it waits for something outside the runtime ({scheduler.held} held)"
            )


async def explore(scenario: Scenario[T], seeds: Iterable[int], *,
                  check: Callable[[T], bool] | None = None, max_steps: int = 100_000,
                  stall_timeout: float = 2.0, clock: RuntimeClock = WALL_CLOCK,
                  stop_at_first_failure: bool = True) -> Exploration[T]:
    """Run ``scenario`` under each seed; report the runs and the first failing seed.

    A seed fails if the scenario raises, stalls (see :func:`run_seed`, which also says how
    time passes and what ``clock`` is), or ``check(result)`` is false.
    """
    runs: list[SeedRun[T]] = []
    failure: SeedFailedError | None = None
    for seed in seeds:
        run = await run_seed(scenario, seed, max_steps=max_steps, stall_timeout=stall_timeout, clock=clock)
        runs.append(run)
        reason = None
        if run.error is not None:
            reason = f"{type(run.error).__name__}: {run.error}"
        elif check is not None and not check(run.result):  # type: ignore[arg-type]
            reason = f"check failed on result {run.result!r}"
        if reason is not None and failure is None:
            failure = SeedFailedError(seed, reason)
            if stop_at_first_failure:
                break
    return Exploration(tuple(runs), failure)


__all__ = [
    "Delivery",
    "Exploration",
    "SeedFailedError",
    "Scenario",
    "SeedRun",
    "StallError",
    "SteppingScheduler",
    "actor_instance",
    "drive",
    "explore",
    "open_stepping_runtime",
    "run_seed",
    "run_stepping",
]
