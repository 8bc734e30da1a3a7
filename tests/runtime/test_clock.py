"""The runtime's clock: envelopes are stamped by it, on the machine's clock by default or, with
a VirtualClock, at an epoch plus Trio's time, with ids drawn from a seed."""

from __future__ import annotations

import datetime as dt

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import Message, message_id_time_ns
from livecontext.runtime import (
    DEFAULT_EPOCH,
    Actor,
    AuditEvent,
    AuditRecord,
    UsageError,
    VirtualClock,
    WallClock,
    handler,
    open_runtime,
)
from livecontext.runtime.testing import actor_instance

UTC = dt.timezone.utc


@frozen
class Ping(Message):
    pass


class Sink(Actor):
    @handler
    async def on_ping(self, msg: Ping) -> None:
        pass


async def delivered_after(seconds: float, **runtime: object) -> list[AuditRecord]:
    """Open a runtime, wait ``seconds`` on Trio's clock, tell a sink one ping; the audit records."""
    seen: list[AuditRecord] = []
    async with open_runtime(**runtime) as rt:  # type: ignore[arg-type]
        rt.add_audit_hook(seen.append)
        sink = await rt.spawn(Sink, "sink/s")
        await trio.sleep(seconds)
        await rt.client("t").tell(sink, Ping())
        await trio.testing.wait_all_tasks_blocked()
    return [r for r in seen if r.event is AuditEvent.DELIVERED]


async def test_a_virtual_clock_stamps_envelopes_at_its_epoch_plus_trios_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    [record] = await delivered_after(90, clock=VirtualClock())
    env = record.envelope
    assert env.sent_at == DEFAULT_EPOCH + dt.timedelta(seconds=90) == dt.datetime(2000, 1, 1, 0, 1, 30, tzinfo=UTC)
    assert env.sent_mono_ns == 90 * 10**9
    assert message_id_time_ns(env.message_id) == round(env.sent_at.timestamp()) * 10**9


async def test_a_virtual_clock_starts_at_the_epoch_it_is_given(autojump_clock: trio.testing.MockClock) -> None:
    epoch = dt.datetime(2031, 5, 4, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    [record] = await delivered_after(1.5, clock=VirtualClock(epoch))
    assert record.envelope.sent_at == dt.datetime(2031, 5, 4, 10, 0, 1, 500_000, tzinfo=UTC)
    assert VirtualClock(epoch).epoch.utcoffset() == dt.timedelta(0)


async def test_the_default_clock_is_the_machines(autojump_clock: trio.testing.MockClock) -> None:
    before = dt.datetime.now(UTC)
    [record] = await delivered_after(3600)  # an hour on Trio's clock is no time on the machine's
    after = dt.datetime.now(UTC)
    assert before <= record.envelope.sent_at <= after


async def test_message_ids_are_drawn_from_the_seed_of_a_virtual_clock(autojump_clock: trio.testing.MockClock) -> None:
    first = [r.envelope.message_id for r in await delivered_after(5, clock=VirtualClock(seed=7))]
    # (a second runtime of the same test starts later on Trio's clock: compare the node, not the time)
    again = [r.envelope.message_id for r in await delivered_after(5, clock=VirtualClock(seed=7))]
    other = [r.envelope.message_id for r in await delivered_after(5, clock=VirtualClock(seed=8))]
    assert [i.split("-")[1] for i in first] == [i.split("-")[1] for i in again]
    assert [i.split("-")[1] for i in first] != [i.split("-")[1] for i in other]


def test_a_virtual_clocks_randomness_is_its_seeds_and_each_purpose_has_its_own() -> None:
    a, b = VirtualClock(seed=3), VirtualClock(seed=3)
    assert [a.token_hex(6) for _ in range(3)] == [b.token_hex(6) for _ in range(3)]
    assert a.random("retry:x").random() == b.random("retry:x").random()
    assert a.random("retry:x").random() != a.random("retry:y").random()
    assert VirtualClock(seed=4).token_hex(6) != VirtualClock(seed=3).token_hex(6)
    assert len(WallClock().token_hex(6)) == 12


def test_a_virtual_clock_refuses_an_epoch_without_a_time_zone() -> None:
    with pytest.raises(UsageError, match=r"VirtualClock's epoch 2000-01-01T00:00:00 has no time zone; give an aware"):
        VirtualClock(dt.datetime(2000, 1, 1))


async def test_open_runtime_refuses_a_trio_clock_and_says_where_it_goes() -> None:
    with pytest.raises(UsageError, match=r"open_runtime\(clock=...\) takes a WallClock or a VirtualClock, got "
                                         r"<MockClock.*trio.run\(..., clock=MockClock\(\)\)"):
        async with open_runtime(clock=trio.testing.MockClock()):  # type: ignore[arg-type]
            pass


async def test_an_actor_reads_its_runtimes_clock(autojump_clock: trio.testing.MockClock) -> None:
    clock = VirtualClock()
    async with open_runtime(clock=clock) as rt:
        sink = await rt.spawn(Sink, "sink/s")
        await trio.sleep(2)
        assert actor_instance(sink).ctx.runtime.clock is clock
        assert clock.now() == DEFAULT_EPOCH + dt.timedelta(seconds=2)
