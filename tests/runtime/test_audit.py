"""The audit hook sees every delivered, replied and dropped envelope; statistics count them."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import ActorId, Message, Topic, message_id_time_ns
from livecontext.runtime import Actor, AuditEvent, AuditRecord, RemoteActorError, handler, open_runtime


@frozen
class Hello(Message):
    text: str


@frozen
class Echo(Message):
    text: str


@frozen
class Boom(Message):
    pass


class Greeter(Actor):
    async def on_start(self) -> None:
        self.ctx.subscribe("greetings")

    @handler
    async def on_hello(self, msg: Hello) -> None:
        pass

    @handler
    async def on_echo(self, msg: Echo) -> Echo:
        return msg

    @handler
    async def on_boom(self, msg: Boom) -> None:
        raise ValueError("boom")


async def test_every_delivered_envelope_is_audited_with_what_the_runtime_stamped() -> None:
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref = await rt.spawn(Greeter, "greeter/g")
        client = rt.client("t")
        before = dt.datetime.now(dt.timezone.utc)
        await client.tell(ref, Hello("told"))
        await client.ask(ref, Echo("asked"))
        await client.publish(Topic("greetings"), Hello("published"))
        await client.ask(ref, Echo("sync"))
    delivered = [r.envelope for r in records if r.event is AuditEvent.DELIVERED]
    assert [e.payload for e in delivered] == [Hello("told"), Echo("asked"), Hello("published"), Echo("sync")]
    assert [e.recipient for e in delivered] == [ref.id, ref.id, Topic("greetings"), ref.id]
    for envelope in delivered:
        assert envelope.sender == ActorId("client", "t")
        assert envelope.sent_at.tzinfo is dt.timezone.utc
        assert before <= envelope.sent_at <= dt.datetime.now(dt.timezone.utc)
        assert envelope.sent_mono_ns > 0
        assert envelope.causation_id is None and envelope.correlation_id is None
        assert abs(message_id_time_ns(envelope.message_id) / 1e9 - envelope.sent_at.timestamp()) < 1e-3


async def test_replies_are_audited_as_replied_and_carry_the_request_id() -> None:
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref = await rt.spawn(Greeter, "greeter/g")
        await rt.client("t").ask(ref, Echo("x"))
    request, reply = (r.envelope for r in records)
    assert [r.event for r in records] == [AuditEvent.DELIVERED, AuditEvent.REPLIED]
    assert reply.correlation_id == request.message_id
    assert reply.causation_id == request.message_id  # sent while handling the request
    assert (reply.sender, reply.recipient) == (ref.id, ActorId("client", "t"))
    assert reply.payload == Echo("x")


async def test_message_ids_of_one_runtime_sort_in_the_order_the_envelopes_were_made() -> None:
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref = await rt.spawn(Greeter, "greeter/g")
        client = rt.client("t")
        for i in range(200):
            await client.tell(ref, Hello(str(i)))
        await client.ask(ref, Echo("end"))
    ids = [r.envelope.message_id for r in records]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)


async def test_a_failing_audit_hook_is_logged_and_does_not_break_delivery(caplog: pytest.LogCaptureFixture) -> None:
    def broken(record: AuditRecord) -> None:
        raise RuntimeError("audit store is down")

    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(broken)
        rt.add_audit_hook(records.append)
        ref = await rt.spawn(Greeter, "greeter/g")
        with caplog.at_level(logging.ERROR, logger="livecontext.runtime"):
            assert await rt.client("t").ask(ref, Echo("still")) == Echo("still")
    assert len(records) == 2  # the next hook still saw everything
    assert "audit hook" in caplog.text and "audit store is down" in caplog.text


async def test_a_removed_hook_is_no_longer_called() -> None:
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref = await rt.spawn(Greeter, "greeter/g")
        client = rt.client("t")
        await client.ask(ref, Echo("one"))
        rt.remove_audit_hook(records.append)
        await client.ask(ref, Echo("two"))
    assert [r.envelope.payload for r in records] == [Echo("one"), Echo("one")]


async def test_statistics_count_deliveries_drops_restarts_and_actors(autojump_clock: trio.testing.MockClock) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Greeter, "greeter/g")
        other = await rt.spawn(Greeter, "greeter/other")
        client = rt.client("t")
        await client.ask(ref, Echo("a"))
        await client.tell(ref, Hello("b"))
        with pytest.raises(RemoteActorError):
            await client.ask(ref, Boom())
        await client.publish("greetings", Echo("to both greeters"))
        await rt.stop(other)
        await trio.sleep(1)
        stats = rt.statistics()
    assert stats.delivered == 5  # Echo, Hello, Boom, and the published Echo twice
    assert stats.restarts == 1
    assert stats.dropped == 0
    assert (stats.actors_running, stats.actors_stopped) == (1, 1)
    assert stats.pending_asks == 0
    assert stats.escalations == 0


async def test_message_ids_keep_sorting_when_the_wall_clock_steps_back(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    readings = iter([2_000_000_000_000_000_000, 1_000_000_000_000_000_000] * 1000)  # NTP steps back
    monkeypatch.setattr(time, "time_ns", lambda: next(readings))  # the kernel's wall clock
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref = await rt.spawn(Greeter, "greeter/g")
        client = rt.client("t")
        for i in range(10):
            await client.tell(ref, Hello(str(i)))
        await client.ask(ref, Echo("end"))
    ids = [r.envelope.message_id for r in records]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
