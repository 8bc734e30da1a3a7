"""One timer task for every sleeper in a runtime: :func:`sleep`, a cheaper ``trio.sleep``.

Why: ``trio.sleep`` enters a cancel scope with a deadline, registers that deadline with the
run loop and is woken by the scope's cancellation, which raises and catches ``Cancelled``, for
every sleep. A fleet of agents whose model calls are sleeps pays that thousands of times, and
their deadlines fall due together while the CPU is busy, so one wake of a shared timer can
serve many sleepers (the figures: docs/kernel.md, "One timer for every sleeper").

How: a sleeper pushes ``(deadline, seq, entry)`` on a heap and parks with
``wait_task_rescheduled``. One timer task (:meth:`Timer.run`, started by ``open_runtime``)
waits in a cancel scope whose deadline is the earliest sleeper's (lowered when an earlier one
arrives) and then reschedules every sleeper that is due, in one go: one deadline and one
``Cancelled`` per batch instead of per sleep. A sleeper cancelled while parked marks its entry
dead (skipped when popped) and raises ``Cancelled``, as it would from ``trio.sleep``. When the
timer task ends (its runtime closing), every parked sleeper is woken and, its deadline not
reached, falls back to ``trio.sleep_until``; later sleeps use ``trio.sleep_until`` directly.
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import math

import trio


class _Sleeper:
    __slots__ = ("task",)

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task: trio.lowlevel.Task | None = task
        """``None`` once the sleeper was cancelled: its entry is skipped when popped."""


class Timer:
    """Wakes many sleeping tasks from one task. Run :meth:`run` in a nursery.

    :meth:`sleep_until` works before :meth:`run` starts (the sleeper waits for it) and after
    it ends (through ``trio.sleep_until``).
    """

    def __init__(self) -> None:
        self.trio_token = trio.lowlevel.current_trio_token()
        """The Trio run the timer serves (make it inside that run)."""
        self._heap: list[tuple[float, int, _Sleeper]] = []
        self._seq = itertools.count()  # ties wake in arrival order
        self._wait: trio.CancelScope | None = None
        """The scope the timer task waits in; its deadline is the earliest sleeper's."""
        self._ended = False

    async def sleep_until(self, deadline: float) -> None:
        """Like ``trio.sleep_until``: a checkpoint that returns once ``trio.current_time()``
        has reached ``deadline``, never before; cancellable.

        Raises:
            ValueError: ``deadline`` is NaN.
        """
        if math.isnan(deadline):
            raise ValueError("deadline must not be NaN")
        if self._ended:
            await trio.sleep_until(deadline)
            return
        if deadline <= trio.current_time():
            await trio.lowlevel.checkpoint()
            return
        sleeper = _Sleeper(trio.lowlevel.current_task())
        heapq.heappush(self._heap, (deadline, next(self._seq), sleeper))
        if self._wait is not None and deadline < self._wait.deadline:
            self._wait.deadline = deadline

        def abort(_: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
            sleeper.task = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)
        if self._ended and trio.current_time() < deadline:  # woken as the timer task ended
            await trio.sleep_until(deadline)

    async def run(self) -> None:
        """Wake sleepers as they fall due, until cancelled; then wake the others, which
        finish their sleeps with ``trio.sleep_until``."""
        heap = self._heap
        try:
            while True:
                with trio.CancelScope(deadline=heap[0][0] if heap else math.inf) as self._wait:
                    await trio.sleep_forever()
                now = trio.current_time()
                while heap and heap[0][0] <= now:
                    task = heapq.heappop(heap)[2].task
                    if task is not None:
                        trio.lowlevel.reschedule(task)
        finally:
            self._ended = True
            self._wait = None
            for _, _, sleeper in heap:
                if sleeper.task is not None:
                    trio.lowlevel.reschedule(sleeper.task)
            heap.clear()


current_timer: contextvars.ContextVar[Timer | None] = contextvars.ContextVar(
    "livecontext.runtime.timer", default=None)
"""The timer of the runtime the current task runs in: set by ``open_runtime`` (``None`` under
a stepping scheduler) and inherited by the tasks it starts."""


async def sleep(seconds: float) -> None:
    """Pause the current task for ``seconds``: ``trio.sleep``, made cheaper inside a runtime.

    Inside :func:`open_runtime` (in an actor, a task it started, or the ``async with`` block)
    the runtime's one timer task wakes every sleeper, which costs a fraction of the CPU of
    ``trio.sleep`` when thousands of tasks sleep. Outside a runtime, and under a stepping
    scheduler (which must stay deterministic), it is ``trio.sleep``. Either way it behaves as
    ``trio.sleep`` does: a checkpoint even for 0 seconds, cancellable, on Trio's clock (so a
    ``MockClock`` drives it), and it never returns early.

    Raises:
        ValueError: ``seconds`` is negative or NaN.
    """
    if not seconds >= 0:  # NaN fails this too
        raise ValueError(f"sleep needs 0 or more seconds, got {seconds}")
    timer = current_timer.get()
    # a worker thread inherits the context, so it may see the timer of a run it is not in
    if timer is None or timer.trio_token is not trio.lowlevel.current_trio_token():
        await trio.sleep(seconds)
    else:
        await timer.sleep_until(trio.current_time() + seconds)
