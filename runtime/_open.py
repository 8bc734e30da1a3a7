"""Opening a runtime: :func:`open_runtime`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import trio

from ._gc import gc_tuned
from ._runtime import Runtime
from ._timer import Timer, current_timer

if TYPE_CHECKING:
    from ._stepping import SteppingScheduler


@asynccontextmanager
async def open_runtime(
    *, scheduler: SteppingScheduler | None = None, drain_timeout: float = 2.0,
    inline_asks: bool = True, tune_gc: bool = True,
) -> AsyncIterator[Runtime]:
    """Open a runtime; on exit every actor is stopped in order, then the nursery closes.

    Args:
        scheduler: ``None`` for live Trio scheduling, or a :class:`SteppingScheduler` to hold
            every envelope until ``step()`` delivers it.
        drain_timeout: how long an actor may drain its mailbox at shutdown before cancellation.
        inline_asks: let a message for an inline handler (``@handler(inline=True)``) that
            finds the actor idle run the handler in the sender's task instead of switching
            tasks twice. The actor still handles one message at a time, in mailbox order; only
            which task runs the handler changes. ``False`` always goes through the mailbox (and
            so does a stepping scheduler, which must hold every envelope).
        tune_gc: raise the cyclic garbage collector's thresholds while the runtime is open
            (:data:`GC_THRESHOLDS`, restored when the last runtime closes); with thousands of
            actors the default thresholds cost more CPU than the actors (see ``_gc.py``).
            ``False`` leaves the process's thresholds alone.

    Code running in the runtime (its actors, the tasks they start, the ``async with`` block)
    can sleep with :func:`livecontext.runtime.sleep`: one timer task of the runtime wakes
    every such sleeper, for a fraction of ``trio.sleep``'s CPU (not under a stepping scheduler).
    """
    if scheduler is not None:
        scheduler._check_free()  # raised here, not inside the nursery's exception group
    with gc_tuned() if tune_gc else contextlib.nullcontext():
        async with _open_runtime(scheduler, drain_timeout, inline_asks) as rt:
            yield rt


@asynccontextmanager
async def _open_runtime(scheduler: SteppingScheduler | None, drain_timeout: float,
                        inline_asks: bool) -> AsyncIterator[Runtime]:
    async with trio.open_nursery() as nursery:
        rt = Runtime(nursery, scheduler, drain_timeout=drain_timeout, inline_asks=inline_asks)
        # the timer is in the caller's context before any actor starts, so actors, the tasks
        # they start and the caller's own sleep through it; it serves them while aclose()
        # drains the actors and is cancelled after (a sleeper left then falls back to trio's)
        timer = Timer() if scheduler is None else None
        if timer is not None:
            nursery.start_soon(timer.run, name="livecontext.runtime timer")
        token = current_timer.set(timer)
        try:
            yield rt
        finally:
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + max(drain_timeout * 4, 1.0)
                await rt.aclose()
            current_timer.reset(token)
            nursery.cancel_scope.cancel()
