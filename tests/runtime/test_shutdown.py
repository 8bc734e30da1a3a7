"""Orderly shutdown: drain, on_stop, reverse spawn order, then cancel what is stuck."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import Message
from livecontext.runtime import Actor, ActorStoppedError, handler, open_runtime
from livecontext.runtime.testing import actor_instance


@frozen
class Work(Message):
    n: int


@frozen
class Stuck(Message):
    pass


@frozen
class StartTicking(Message):
    pass


LOG: list[str] = []


class Logger(Actor):
    """Logs its life to :data:`LOG`; each ``Work`` takes a second."""

    async def on_start(self) -> None:
        LOG.append(f"start {self.ctx.self_id}")

    async def on_stop(self) -> None:
        LOG.append(f"stop {self.ctx.self_id}")

    @handler
    async def on_work(self, msg: Work) -> None:
        await trio.sleep(1)
        LOG.append(f"work {msg.n} {self.ctx.self_id}")

    @handler
    async def on_stuck(self, msg: Stuck) -> None:
        LOG.append(f"stuck {self.ctx.self_id}")
        await trio.sleep_forever()


class Ticker(Actor):
    def __init__(self) -> None:
        self.ticks = 0

    @handler
    async def on_start_ticking(self, msg: StartTicking) -> None:
        async def tick() -> None:
            while True:
                await trio.sleep(1)
                self.ticks += 1

        self.ctx.nursery.start_soon(tick)


async def test_leaving_the_runtime_handles_queued_messages_then_calls_on_stop(
    autojump_clock: trio.testing.MockClock,
) -> None:
    LOG.clear()
    async with open_runtime(drain_timeout=10) as rt:
        ref = await rt.spawn(Logger, "logger/a")
        client = rt.client("t")
        for n in range(3):
            await client.tell(ref, Work(n))
        assert LOG == ["start logger/a"]
    assert LOG == ["start logger/a", "work 0 logger/a", "work 1 logger/a", "work 2 logger/a", "stop logger/a"]


async def test_later_spawned_actors_stop_first(autojump_clock: trio.testing.MockClock) -> None:
    LOG.clear()
    async with open_runtime() as rt:
        for name in ("first", "second", "third"):
            await rt.spawn(Logger, f"logger/{name}")
    assert [line for line in LOG if line.startswith("stop")] == [
        "stop logger/third", "stop logger/second", "stop logger/first",
    ]


async def test_stopping_a_parent_stops_its_children_first(autojump_clock: trio.testing.MockClock) -> None:
    LOG.clear()
    async with open_runtime() as rt:
        parent = await rt.spawn(Logger, "logger/parent")
        await rt.spawn(Logger, "logger/child", parent=parent.id)
        await rt.spawn(Logger, "logger/other")
        await rt.stop(parent)
        assert LOG[-2:] == ["stop logger/child", "stop logger/parent"]
        assert rt.is_running(rt.ref("logger/other"))


async def test_an_actor_stuck_in_a_handler_is_cancelled_after_the_drain_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    LOG.clear()
    start = trio.current_time()
    async with open_runtime(drain_timeout=3) as rt:
        stuck = await rt.spawn(Logger, "logger/stuck")
        await rt.spawn(Logger, "logger/fine")
        await rt.client("t").tell(stuck, Stuck())
    assert trio.current_time() - start == pytest.approx(3)
    assert "stop logger/fine" in LOG
    assert "stop logger/stuck" not in LOG  # cancelled, not drained: on_stop is for orderly stops
    assert not rt.is_running(stuck)


async def test_stop_cancels_a_stuck_actor_after_its_own_drain_timeout(autojump_clock: trio.testing.MockClock) -> None:
    async with open_runtime(drain_timeout=100) as rt:
        ref = await rt.spawn(Logger, "logger/stuck")
        await rt.client("t").tell(ref, Stuck())
        start = trio.current_time()
        await rt.stop(ref, drain_timeout=0.5)
        assert trio.current_time() - start == pytest.approx(0.5)
        assert not rt.is_running(ref)
        await rt.stop(ref)  # stopping twice is harmless


async def test_nothing_keeps_running_after_the_runtime_exits(autojump_clock: trio.testing.MockClock) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Ticker, "ticker/t")
        client = rt.client("t")
        await client.ask(ref, StartTicking())
        await trio.sleep(3.5)
    actor = actor_instance(ref)
    assert isinstance(actor, Ticker)
    ticks = actor.ticks
    assert ticks == 3
    await trio.sleep(10)
    assert actor.ticks == ticks  # its background task is gone
    assert not rt.is_running(ref)
    assert rt.statistics().actors_running == 0
    with pytest.raises(ActorStoppedError, match="actor ticker/t is stopped"):
        await client.tell(ref, StartTicking())


async def test_a_stopping_actor_refuses_new_messages_while_it_drains(autojump_clock: trio.testing.MockClock) -> None:
    LOG.clear()
    async with open_runtime() as rt:
        ref = await rt.spawn(Logger, "logger/a")
        client = rt.client("t")
        await client.tell(ref, Work(1))
        refused: list[Exception] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(rt.stop, ref)
            await trio.testing.wait_all_tasks_blocked()
            try:
                await client.tell(ref, Work(2))
            except ActorStoppedError as exc:
                refused.append(exc)
        assert [str(e) for e in refused] == [
            "actor logger/a is stopped: the Work was not delivered; spawn it again or send to a running actor"
        ]
    assert LOG == ["start logger/a", "work 1 logger/a", "stop logger/a"]


async def test_an_error_in_the_body_still_stops_every_actor_in_order(autojump_clock: trio.testing.MockClock) -> None:
    LOG.clear()
    with pytest.RaisesGroup(pytest.RaisesExc(KeyError, match="'oops'")):
        async with open_runtime() as rt:
            ref = await rt.spawn(Logger, "logger/a")
            await rt.client("t").tell(ref, Work(1))
            raise KeyError("oops")
    assert LOG == ["start logger/a", "work 1 logger/a", "stop logger/a"]
