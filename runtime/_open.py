"""Opening a runtime: :func:`open_runtime`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import trio

from ._clock import WALL_CLOCK, RuntimeClock
from ._errors import UsageError
from ._gc import gc_tuned
from ._runtime import Runtime

if TYPE_CHECKING:
    from ._stepping import SteppingScheduler


@asynccontextmanager
async def open_runtime(
    *, scheduler: SteppingScheduler | None = None, drain_timeout: float = 2.0, tune_gc: bool = True,
    clock: RuntimeClock = WALL_CLOCK,
) -> AsyncIterator[Runtime]:
    """Open a runtime; on exit every actor is stopped in order, then the nursery closes.

    Args:
        scheduler: ``None`` for live Trio scheduling, or a :class:`SteppingScheduler` to hold
            every envelope until ``step()`` delivers it.
        drain_timeout: how long an actor may drain its mailbox at shutdown before cancellation.
        tune_gc: raise the cyclic garbage collector's thresholds while the runtime is open
            (:data:`GC_THRESHOLDS`, restored when the last runtime closes); with thousands of
            actors the default thresholds cost more CPU than the actors (see ``_gc.py``).
            ``False`` leaves the process's thresholds alone.
        clock: where the runtime and its actors read the time of day they stamp (and their
            randomness by design): the machine's clock (:class:`WallClock`, the default), or
            a :class:`VirtualClock` (an epoch plus Trio's time, seeded ids), with which a run
            under ``trio.testing.MockClock`` stamps virtual times and replays byte for byte.
            Waits (sleeps, timeouts) always follow the Trio run's own clock.

    Raises:
        UsageError: ``clock`` is not a :class:`RuntimeClock`.
    """
    if not isinstance(clock, RuntimeClock):
        raise UsageError(f"open_runtime(clock=...) takes a WallClock or a VirtualClock, got {clock!r}; "
                         "the Trio clock (MockClock) is the Trio run's: trio.run(..., clock=MockClock())")
    if scheduler is not None:
        scheduler._check_free()  # raised here, not inside the nursery's exception group
    with gc_tuned() if tune_gc else contextlib.nullcontext():
        async with _open_runtime(scheduler, drain_timeout, clock) as rt:
            yield rt


@asynccontextmanager
async def _open_runtime(scheduler: SteppingScheduler | None, drain_timeout: float,
                        clock: RuntimeClock) -> AsyncIterator[Runtime]:
    async with trio.open_nursery() as nursery:
        rt = Runtime(nursery, scheduler, drain_timeout=drain_timeout, clock=clock)
        try:
            yield rt
        finally:
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + max(drain_timeout * 4, 1.0)
                await rt.aclose()
            nursery.cancel_scope.cancel()
