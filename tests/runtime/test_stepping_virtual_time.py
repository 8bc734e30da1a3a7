"""The stepping driver under virtual time (pytest-trio's autojump ``MockClock``): a handler's
latency and a timeout pass in virtual seconds without being taken for a stall, and a deadlock
is still a StallError."""

from __future__ import annotations

import datetime as dt

import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import Message
from livecontext.runtime import (
    DEFAULT_EPOCH,
    Actor,
    AskTimeoutError,
    AuditEvent,
    AuditRecord,
    Runtime,
    VirtualClock,
    handler,
)
from livecontext.runtime.testing import StallError, run_seed
from tests.support.clock import virtual_seconds


@frozen
class Think(Message):
    seconds: float


@frozen
class Thought(Message):
    seconds: float


@frozen
class Never(Message):
    pass


class Model(Actor):
    """Answers after ``seconds`` on Trio's clock, as a model with latency does."""

    @handler
    async def on_think(self, msg: Think) -> Thought:
        await trio.sleep(msg.seconds)
        return Thought(msg.seconds)


class Stuck(Actor):
    """Thinks 2 s, then waits for something nobody will ever send."""

    @handler
    async def on_think(self, msg: Think) -> Thought:
        await trio.sleep(msg.seconds)
        await trio.Event().wait()
        return Thought(msg.seconds)  # pragma: no cover

    @handler
    async def on_never(self, msg: Never) -> None:
        self.ctx.defer_reply()  # (answered never: the asker's timeout decides)


def thinking(calls: int, seconds: float):  # type: ignore[no-untyped-def]
    async def scenario(rt: Runtime) -> float:
        model = await rt.spawn(Model, "model/m")
        client = rt.client("agent")
        start = trio.current_time()
        for _ in range(calls):
            await client.ask(model, Think(seconds))
        return trio.current_time() - start
    return scenario


async def test_a_half_hour_of_two_second_latencies_passes_in_virtual_time_without_a_stall(
    autojump_clock: trio.testing.MockClock,
) -> None:
    run = await run_seed(thinking(900, 2.0), seed=1)
    assert run.error is None
    assert run.result == 1800.0  # every latency, to the nanosecond: no poll overshoots a deadline
    assert len(run.trace) == 900


def test_the_same_seed_gives_the_same_trace_with_latencies() -> None:
    async def twice() -> tuple[object, object]:
        first = await run_seed(thinking(5, 2.0), seed=4)
        second = await run_seed(thinking(5, 2.0), seed=4)
        return first.trace, second.trace

    a, b = trio.run(twice, clock=trio.testing.MockClock(autojump_threshold=0))
    assert a == b


async def test_a_wait_longer_than_the_stall_timeout_is_a_stall_unless_the_timeout_is_raised(
    autojump_clock: trio.testing.MockClock,
) -> None:
    stalled = await run_seed(thinking(1, 10.0), seed=1, stall_timeout=2)
    assert isinstance(stalled.error, StallError)
    assert str(stalled.error).startswith("a handler has run for 2 s without finishing")
    fine = await run_seed(thinking(3, 10.0), seed=1, stall_timeout=15)
    assert fine.error is None and fine.result == 30.0


async def test_a_deadlock_behind_a_latency_is_reported_as_a_stall_error(autojump_clock: trio.testing.MockClock) -> None:
    async def deadlock(rt: Runtime) -> None:
        stuck = await rt.spawn(Stuck, "model/stuck")
        await rt.client("agent").ask(stuck, Think(2.0))  # (its 30 s timeout is no progress)

    start = virtual_seconds()
    run = await run_seed(deadlock, seed=1)
    assert isinstance(run.error, StallError)
    assert str(run.error).startswith("a handler has run for 2 s without finishing while the scenario waits")
    # its 2 s of latency, 2 s of nothing happening, then the 2 s the runtime's shutdown gives
    # the stuck handler to finish (drain_timeout) before it cancels it
    assert virtual_seconds() - start == 6.0


async def test_a_scenario_waiting_on_nothing_is_a_stall_error_at_once_in_virtual_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def waits_forever(rt: Runtime) -> None:
        await rt.spawn(Model, "model/m")
        await trio.Event().wait()

    start = virtual_seconds()
    run = await run_seed(waits_forever, seed=1, stall_timeout=600)
    assert isinstance(run.error, StallError)
    assert str(run.error).startswith("nothing to deliver for 600 s and the scenario has not finished")
    assert virtual_seconds() - start == 600.0


async def test_an_ask_timeout_fires_in_virtual_time_under_the_stepping_driver(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def unanswered(rt: Runtime) -> None:
        stuck = await rt.spawn(Stuck, "model/stuck")
        await rt.client("agent").ask(stuck, Never(), timeout=45)

    start = virtual_seconds()
    run = await run_seed(unanswered, seed=1, stall_timeout=60)
    assert isinstance(run.error, AskTimeoutError)
    assert str(run.error).startswith("ask Never to model/stuck got no reply within 45 s")
    assert virtual_seconds() - start == 45.0


async def test_a_seeded_run_on_a_virtual_clock_stamps_its_envelopes_in_virtual_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[AuditRecord] = []

    async def audited(rt: Runtime) -> float:
        rt.add_audit_hook(seen.append)
        return await thinking(3, 2.0)(rt)

    clock = VirtualClock(seed=2)
    run = await run_seed(audited, seed=1, clock=clock)
    assert run.error is None and run.result == 6.0
    asks = [r.envelope for r in seen if r.event is AuditEvent.DELIVERED]
    assert [e.sent_at - DEFAULT_EPOCH for e in asks] == [dt.timedelta(seconds=s) for s in (0, 2, 4)]
