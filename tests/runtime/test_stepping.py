"""The stepping scheduler and livecontext.runtime.testing: seeded, reproducible interleavings."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import ActorId, Message
from livecontext.runtime import Actor, Delivery, Runtime, SteppingScheduler, handler, open_runtime
from livecontext.runtime.testing import (
    SeedFailedError,
    StallError,
    actor_instance,
    explore,
    open_stepping_runtime,
    run_seed,
)

# -- a register whose final value depends on the order of delivery --------------------------------


@frozen
class Set(Message):
    value: int


@frozen
class Get(Message):
    pass


@frozen
class Value(Message):
    value: int
    writes: int


@frozen
class Go(Message):
    """Tell ``Set(value)`` to the register."""

    register: ActorId
    value: int


class Register(Actor):
    def __init__(self) -> None:
        self.value = 0
        self.writes = 0

    @handler
    async def on_set(self, msg: Set) -> None:
        self.value = msg.value
        self.writes += 1

    @handler
    async def on_get(self, msg: Get) -> Value:
        return Value(self.value, self.writes)


class Writer(Actor):
    @handler
    async def on_go(self, msg: Go) -> None:
        await self.ctx.tell(msg.register, Set(msg.value))


async def last_writer_wins(rt: Runtime) -> int:
    """Three writers set a register; whose write lands last depends on the delivery order."""
    register = await rt.spawn(Register, "register/r")
    writers = [await rt.spawn(Writer, f"writer/w{i}") for i in range(3)]
    client = rt.client("test")
    for i, writer in enumerate(writers):
        await client.tell(writer, Go(register.id, i + 1))
    while True:
        reply = await client.ask(register, Get())
        if reply.writes == 3:
            return int(reply.value)


# -- a non-atomic read-modify-write between two actors ----------------------------------------------


@frozen
class Increment(Message):
    counter: ActorId


class Incrementer(Actor):
    """Reads the register, then writes the value plus one: two of these can lose an update."""

    @handler
    async def on_increment(self, msg: Increment) -> None:
        current = await self.ctx.ask(msg.counter, Get())
        await self.ctx.ask(msg.counter, Set(current.value + 1))


async def two_increments(rt: Runtime) -> int:
    counter = await rt.spawn(Register, "register/counter")
    a = await rt.spawn(Incrementer, "inc/a")
    b = await rt.spawn(Incrementer, "inc/b")
    client = rt.client("test")
    async with trio.open_nursery() as nursery:  # two tasks of one client, in whatever order trio runs them
        nursery.start_soon(client.ask, a, Increment(counter.id))
        nursery.start_soon(client.ask, b, Increment(counter.id))
    reply = await client.ask(counter, Get())
    return int(reply.value)


# -- tests ----------------------------------------------------------------------------------------------


async def test_the_same_seed_gives_the_same_trace_and_the_same_outcome(autojump_clock: trio.testing.MockClock) -> None:
    for seed in (0, 7, 12345):
        first = await run_seed(last_writer_wins, seed)
        second = await run_seed(last_writer_wins, seed)
        assert first.ok and second.ok
        assert first.trace == second.trace
        assert first.result == second.result
        assert len(first.trace) >= 7  # 3 Go, 3 Set and at least one Get


async def test_different_seeds_explore_different_orders(autojump_clock: trio.testing.MockClock) -> None:
    report = await explore(last_writer_wins, seeds=range(20))
    assert report.first_failure is None
    assert len(report.runs) == 20
    assert report.distinct_traces > 1
    assert len({run.result for run in report.runs}) > 1  # the last writer differs between seeds


async def test_concurrent_client_tasks_do_not_make_a_seed_irreproducible(
    autojump_clock: trio.testing.MockClock,
) -> None:
    for seed in range(10):
        first = await run_seed(two_increments, seed)
        again = await run_seed(two_increments, seed)
        assert first.ok, first.error
        assert (first.trace, first.result) == (again.trace, again.result)


async def test_explore_reports_the_first_seed_that_loses_an_update_and_run_seed_replays_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    report = await explore(two_increments, seeds=range(50), check=lambda total: total == 2)
    failure = report.first_failure
    assert failure is not None, "some interleaving reads twice before writing"
    assert report.runs[-1].seed == failure.seed  # it stopped at the first failure
    assert all(run.result == 2 for run in report.runs[:-1])
    assert str(failure) == (f"seed {failure.seed} failed: check failed on result 1 "
                            f"(replay with run_seed(scenario, {failure.seed}))")
    replay = await run_seed(two_increments, failure.seed)
    assert replay.result == 1
    assert replay.trace == report.runs[-1].trace
    with pytest.raises(SeedFailedError, match=f"seed {failure.seed} failed"):
        report.raise_on_failure()


async def test_explore_can_run_every_seed_past_the_first_failure(autojump_clock: trio.testing.MockClock) -> None:
    report = await explore(two_increments, seeds=range(30), check=lambda total: total == 2,
                           stop_at_first_failure=False)
    assert len(report.runs) == 30
    assert {run.result for run in report.runs} == {1, 2}


async def test_a_scenario_that_raises_fails_its_seed_with_the_error() -> None:
    async def broken(rt: Runtime) -> None:
        raise LookupError("no such agent")

    report = await explore(broken, seeds=[3, 4])
    assert report.first_failure is not None
    assert report.first_failure.seed == 3
    assert report.first_failure.reason == "LookupError: no such agent"
    assert isinstance(report.runs[0].error, LookupError)


@frozen
class Start(Message):
    pass


@frozen
class Release(Message):
    pass


class SelfWaiter(Actor):
    """Waits inside a handler for a message it can only handle after that handler: a deadlock."""

    def __init__(self) -> None:
        self.released = trio.Event()

    @handler
    async def on_start_msg(self, msg: Start) -> None:
        await self.ctx.tell(self.ctx.self_id, Release())
        await self.released.wait()

    @handler
    async def on_release(self, msg: Release) -> None:
        self.released.set()


async def test_a_scenario_whose_handler_never_finishes_fails_with_stall_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def deadlock(rt: Runtime) -> None:
        ref = await rt.spawn(SelfWaiter, "waiter/w")
        await rt.client("t").ask(ref, Start())

    run = await run_seed(deadlock, 1, stall_timeout=2)
    assert isinstance(run.error, StallError)
    assert str(run.error).startswith("a handler has run for 2 s without finishing while the scenario waits: a deadlock")
    assert [d.message_type for d in run.trace] == ["Start"]


async def test_a_scenario_waiting_while_nothing_is_deliverable_fails_with_stall_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def waits_forever(rt: Runtime) -> None:
        await rt.spawn(Register, "register/r")
        await trio.Event().wait()

    report = await explore(waits_forever, seeds=[5])
    assert report.first_failure is not None
    assert report.first_failure.reason.startswith(
        "StallError: nothing to deliver for 2 s and the scenario has not finished: a deadlock")


async def test_step_delivers_one_held_envelope_at_a_time() -> None:
    async with open_stepping_runtime(seed=1) as (rt, scheduler):
        register = await rt.spawn(Register, "register/r")
        client = rt.client("test")
        for value in (1, 2, 3):
            await client.tell(register, Set(value))
        assert scheduler.held == 3
        actor = actor_instance(register)
        assert isinstance(actor, Register)
        assert actor.writes == 0  # held, not delivered
        first = await scheduler.step()
        assert first == Delivery(1, "client/test", "register/r", 1, "Set")
        assert (actor.writes, actor.value, scheduler.held) == (1, 1, 2)
        assert await scheduler.run_until_idle() == 2
        assert actor.value == 3  # one sender to one recipient: order kept
        assert await scheduler.step() is None


async def test_envelopes_still_held_at_exit_are_delivered_before_the_actors_stop() -> None:
    async with open_stepping_runtime(seed=1) as (rt, scheduler):
        register = await rt.spawn(Register, "register/r")
        await rt.client("test").tell(register, Set(9))
        actor = actor_instance(register)
        assert isinstance(actor, Register)
    assert actor.value == 9


async def test_a_scheduler_drives_a_single_runtime() -> None:
    scheduler = SteppingScheduler(seed=0)
    async with open_runtime(scheduler=scheduler):
        with pytest.raises(RuntimeError, match="a SteppingScheduler drives one runtime; make a new one per runtime"):
            async with open_runtime(scheduler=scheduler):
                pass  # pragma: no cover
