"""The runtime's sleep: one timer task wakes every sleeper, exactly as ``trio.sleep`` would."""

from __future__ import annotations

import math
import random

import pytest
import trio
import trio.testing
from attrs import frozen
from hypothesis import given, settings
from hypothesis import strategies as st

from livecontext.protocol import Message
from livecontext.runtime import Actor, SteppingScheduler, handler, open_runtime, sleep
from livecontext.runtime._timer import Timer


def spy_on_trio_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The durations passed to ``trio.sleep`` from now on (called in the test's body, so that
    pytest-trio's own sleeps while it sets the test up are not counted)."""
    calls: list[float] = []
    real = trio.sleep

    async def spy(seconds: float) -> None:
        calls.append(seconds)
        await real(seconds)

    monkeypatch.setattr(trio, "sleep", spy)
    return calls


async def _wake_times(delays: list[float]) -> list[tuple[float, float]]:
    """Sleep each delay in its own task; return ``(deadline, woke_at)`` per task, in waking order."""
    woke: list[tuple[float, float]] = []

    async def sleeper(delay: float) -> None:
        deadline = trio.current_time() + delay
        await sleep(delay)
        woke.append((deadline, trio.current_time()))

    async with trio.open_nursery() as nursery:
        for delay in delays:
            nursery.start_soon(sleeper, delay)
    return woke


async def test_sleepers_wake_in_deadline_order_and_never_before_their_deadline(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch,
) -> None:
    trio_sleeps = spy_on_trio_sleep(monkeypatch)
    async with open_runtime():
        woke = await _wake_times([3.0, 1.0, 2.5, 0.5, 2.0])
    assert [deadline for deadline, _ in woke] == sorted(deadline for deadline, _ in woke)
    assert all(at == deadline for deadline, at in woke)
    assert trio_sleeps == []  # the runtime's timer served them, not trio.sleep


async def test_on_the_real_clock_no_sleeper_wakes_early() -> None:
    rng = random.Random(7)
    async with open_runtime():
        woke = await _wake_times([rng.uniform(0.001, 0.03) for _ in range(200)])
    assert len(woke) == 200
    assert all(at >= deadline for deadline, at in woke)


async def test_thousands_of_concurrent_sleepers_all_wake_on_time(autojump_clock: trio.testing.MockClock) -> None:
    rng = random.Random(1)
    async with open_runtime():
        woke = await _wake_times([rng.choice([0.0, 0.25, 1.0, 1.5]) + rng.random() for _ in range(5000)])
    assert len(woke) == 5000
    assert all(at == deadline for deadline, at in woke)


async def test_an_earlier_sleeper_arriving_while_the_timer_waits_for_a_later_one_wakes_on_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    woke: dict[str, float] = {}

    async def sleeper(name: str, delay: float) -> None:
        await sleep(delay)
        woke[name] = trio.current_time()

    async with open_runtime():
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sleeper, "late", 10.0)
            await trio.testing.wait_all_tasks_blocked()  # the timer now waits for t+10
            nursery.start_soon(sleeper, "early", 1.0)
    assert woke == {"early": start + 1.0, "late": start + 10.0}


async def test_a_cancelled_sleeper_raises_cancelled_at_once_and_the_others_still_wake(
    autojump_clock: trio.testing.MockClock,
) -> None:
    woke: dict[str, float] = {}
    cancelled_at: list[float] = []

    async def sleeper(name: str, delay: float) -> None:
        await sleep(delay)
        woke[name] = trio.current_time()

    async def cancelled_sleeper(task_status: trio.TaskStatus[trio.CancelScope]) -> None:
        with trio.CancelScope() as scope:
            task_status.started(scope)
            try:
                await sleep(2.0)
            except trio.Cancelled:
                cancelled_at.append(trio.current_time())
                raise
        assert scope.cancelled_caught

    async with open_runtime():
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sleeper, "first", 1.0)
            nursery.start_soon(sleeper, "third", 3.0)
            scope = await nursery.start(cancelled_sleeper)
            await sleep(0.5)
            scope.cancel()
    assert cancelled_at == [start + 0.5]
    assert woke == {"first": start + 1.0, "third": start + 3.0}


@pytest.mark.parametrize("seconds", [0, 5, math.inf])
async def test_sleeping_in_an_already_cancelled_scope_raises_at_once(
    autojump_clock: trio.testing.MockClock, seconds: float,
) -> None:
    async with open_runtime():
        start = trio.current_time()
        with trio.CancelScope() as scope:
            scope.cancel()
            await sleep(seconds)
            pytest.fail("sleep returned in a cancelled scope")
        assert scope.cancelled_caught
        assert trio.current_time() == start


@pytest.mark.parametrize("seconds", [0, 0.5])
async def test_sleep_is_a_checkpoint_even_for_zero_seconds(
    autojump_clock: trio.testing.MockClock, seconds: float,
) -> None:
    async with open_runtime():
        with trio.testing.assert_checkpoints():
            await sleep(seconds)


async def test_sleeping_until_a_deadline_already_past_is_a_checkpoint_that_returns_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    timer = Timer()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(timer.run)
        start = trio.current_time()
        with trio.testing.assert_checkpoints():
            await timer.sleep_until(start - 1)
        assert trio.current_time() == start
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("seconds", [-0.001, math.nan])
async def test_sleep_refuses_a_negative_or_nan_duration(seconds: float) -> None:
    with pytest.raises(ValueError, match=r"^sleep needs 0 or more seconds, got (-0.001|nan)$"):
        await sleep(seconds)


async def test_sleep_until_refuses_a_nan_deadline() -> None:
    with pytest.raises(ValueError, match="^deadline must not be NaN$"):
        await Timer().sleep_until(math.nan)


async def test_outside_a_runtime_sleep_is_trio_sleep(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch,
) -> None:
    trio_sleeps = spy_on_trio_sleep(monkeypatch)
    start = trio.current_time()
    await sleep(1.5)
    assert trio_sleeps == [1.5]
    assert trio.current_time() == start + 1.5


async def test_after_the_runtime_closes_sleep_is_trio_sleep_again(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch,
) -> None:
    trio_sleeps = spy_on_trio_sleep(monkeypatch)
    async with open_runtime():
        await sleep(1)
    await sleep(2)
    assert trio_sleeps == [2]


async def test_a_worker_thread_running_its_own_trio_run_sleeps_with_trio_not_the_runtimes_timer() -> None:
    def in_thread() -> float:
        async def main() -> float:
            start = trio.current_time()
            await sleep(0.01)  # the runtime's timer is in this thread's context, but not its run
            return trio.current_time() - start
        return trio.run(main)

    async with open_runtime():
        with trio.fail_after(5):
            slept = await trio.to_thread.run_sync(in_thread)
    assert slept >= 0.01


async def test_under_a_stepping_scheduler_sleep_is_trio_sleep_even_inside_a_live_runtime(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch,
) -> None:
    trio_sleeps = spy_on_trio_sleep(monkeypatch)
    async with open_runtime():
        async with open_runtime(scheduler=SteppingScheduler(seed=0)):
            await sleep(1)
        await sleep(2)
    assert trio_sleeps == [1]


@frozen
class Nap(Message):
    seconds: float


@frozen
class NapInBackground(Message):
    seconds: float


NAPS: list[tuple[str, float]] = []


class Sleeper(Actor):
    """Sleeps as told, in its handler or in a background task, and logs when it woke."""

    async def on_stop(self) -> None:
        NAPS.append(("stop", trio.current_time()))

    @handler
    async def on_nap(self, msg: Nap) -> None:
        try:
            await sleep(msg.seconds)
        except trio.Cancelled:
            NAPS.append(("cancelled", trio.current_time()))
            raise
        NAPS.append(("woke", trio.current_time()))

    @handler
    async def on_nap_in_background(self, msg: NapInBackground) -> None:
        async def nap() -> None:
            await sleep(msg.seconds)
            NAPS.append(("woke in background", trio.current_time()))

        self.ctx.nursery.start_soon(nap)


async def test_actors_and_the_tasks_they_start_sleep_on_the_runtime_timer(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch,
) -> None:
    trio_sleeps = spy_on_trio_sleep(monkeypatch)
    NAPS.clear()
    async with open_runtime() as rt:
        start = trio.current_time()
        ref = await rt.spawn(Sleeper, "sleeper/a")
        client = rt.client("t")
        await client.tell(ref, NapInBackground(2))
        await client.ask(ref, Nap(1))
        await sleep(3)
    assert NAPS == [("woke", start + 1), ("woke in background", start + 2), ("stop", start + 4)]
    assert trio_sleeps == []


async def test_a_handler_asleep_when_the_runtime_closes_wakes_while_it_drains(
    autojump_clock: trio.testing.MockClock,
) -> None:
    NAPS.clear()
    async with open_runtime(drain_timeout=2) as rt:
        start = trio.current_time()
        await rt.client("t").tell(await rt.spawn(Sleeper, "sleeper/a"), Nap(1))
    assert NAPS == [("woke", start + 1), ("stop", start + 1)]
    assert trio.current_time() == start + 1


async def test_a_handler_asleep_past_the_drain_timeout_is_cancelled_and_the_runtime_closes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    NAPS.clear()
    async with open_runtime(drain_timeout=2) as rt:
        start = trio.current_time()
        await rt.client("t").tell(await rt.spawn(Sleeper, "sleeper/a"), Nap(60))
    assert NAPS == [("cancelled", start + 2)]
    assert trio.current_time() == start + 2


class ShieldedOnStop(Actor):
    """Sleeps in ``on_stop`` where the runtime's cancellation cannot reach: it outlives the
    runtime's timer."""

    async def on_stop(self) -> None:
        with trio.move_on_after(30) as scope:  # ends the sleep, were it stranded
            scope.shield = True
            await sleep(10)
            NAPS.append(("woke", trio.current_time()))


async def test_a_sleeper_the_runtime_leaves_running_after_its_timer_ends_is_not_stranded(
    autojump_clock: trio.testing.MockClock,
) -> None:
    NAPS.clear()
    async with open_runtime(drain_timeout=0.5) as rt:
        start = trio.current_time()
        await rt.spawn(ShieldedOnStop, "shielded/a")
    # aclose gives up after max(0.5 * 4, 1) s and the timer is cancelled; the sleeper finishes
    assert NAPS == [("woke", start + 10)]
    assert trio.current_time() == start + 10


async def test_a_sleeper_parked_when_the_timer_ends_finishes_its_sleep_and_later_ones_still_sleep(
    autojump_clock: trio.testing.MockClock,
) -> None:
    timer = Timer()
    woke: list[float] = []

    async def sleeper(deadline: float) -> None:
        await timer.sleep_until(deadline)
        woke.append(trio.current_time())

    start = trio.current_time()
    with trio.fail_after(60):  # a stranded sleeper would be cancelled there
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sleeper, start + 5)
            async with trio.open_nursery() as timers:
                timers.start_soon(timer.run)
                await trio.testing.wait_all_tasks_blocked()
                timers.cancel_scope.cancel()
            await timer.sleep_until(start + 1)
            woke.append(trio.current_time())
    assert woke == [start + 1, start + 5]


@given(st.lists(st.integers(min_value=0, max_value=8), max_size=40))
@settings(max_examples=150, deadline=None)
def test_sleepers_are_woken_in_order_of_deadline_then_arrival(quarters: list[int]) -> None:
    tasks: dict[trio.lowlevel.Task, int] = {}
    woken: list[int] = []

    class WakeOrder(trio.abc.Instrument):
        def task_scheduled(self, task: trio.lowlevel.Task) -> None:
            if task in tasks:
                woken.append(tasks[task])

    async def main() -> list[tuple[float, int]]:
        timer = Timer()
        arrivals: list[tuple[float, int]] = []

        async def sleeper(i: int, delay: float, task_status: trio.TaskStatus[None]) -> None:
            deadline = trio.current_time() + delay
            tasks[trio.lowlevel.current_task()] = i
            arrivals.append((deadline, i))
            task_status.started()
            await timer.sleep_until(deadline)  # parks before the next sleeper arrives

        async with trio.open_nursery() as nursery:
            nursery.start_soon(timer.run)
            async with trio.open_nursery() as sleepers:
                for i, quarter in enumerate(quarters):
                    await sleepers.start(sleeper, i, quarter / 4)
            nursery.cancel_scope.cancel()
        return arrivals

    arrivals = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0), instruments=[WakeOrder()])
    assert woken == [i for _, i in sorted(arrivals)]
