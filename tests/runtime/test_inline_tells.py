"""Inline tells and publishes: an idle actor's inline handler with no ``await`` in it runs in the
sender's task before ``tell``/``publish`` returns; anything else goes through the mailbox."""

from __future__ import annotations

import trio
import trio.testing
from attrs import frozen

from livecontext.protocol import Message
from livecontext.runtime import Actor, ActorRef, AuditEvent, AuditRecord, Runtime, handler, open_runtime

TOPIC = "inline.tells"


@frozen
class Ping(Message):
    """Handled inline, without an await: may run in the sender's task."""

    text: str


@frozen
class Yielding(Message):
    """Handled inline, with an await: always through the mailbox when told."""

    text: str


@frozen
class Plain(Message):
    text: str


@frozen
class Boom(Message):
    """Handled inline, without an await, by raising."""


Log = list[tuple[str, trio.lowlevel.Task]]
"""What a Listener handled, and in which task."""


class Listener(Actor):
    def __init__(self, log: Log, starts: list[trio.lowlevel.Task]) -> None:
        self.log = log
        self.starts = starts

    async def on_start(self) -> None:
        self.starts.append(trio.lowlevel.current_task())
        self.ctx.subscribe(TOPIC)

    @handler(inline=True)
    def on_ping(self, msg: Ping) -> None:
        self.log.append((msg.text, trio.lowlevel.current_task()))

    @handler
    async def on_yielding(self, msg: Yielding) -> None:
        await trio.lowlevel.checkpoint()
        self.log.append((msg.text, trio.lowlevel.current_task()))

    @handler
    async def on_plain(self, msg: Plain) -> None:
        self.log.append((msg.text, trio.lowlevel.current_task()))

    @handler(inline=True)
    def on_boom(self, msg: Boom) -> None:
        raise ValueError("boom")


async def _listener(rt: Runtime) -> tuple[ActorRef[Listener], Log, list[trio.lowlevel.Task]]:
    """A spawned, idle Listener, with what it handled and the tasks it started in (both kept
    across its restarts)."""
    log: Log = []
    starts: list[trio.lowlevel.Task] = []
    ref = await rt.spawn(lambda: Listener(log, starts), "listener/l")
    await trio.testing.wait_all_tasks_blocked()  # its loop is parked on an empty mailbox
    return ref, log, starts


async def test_a_tell_to_an_idle_actors_await_free_inline_handler_is_handled_before_tell_returns() -> None:
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref, log, starts = await _listener(rt)
        await rt.client("sender").tell(ref, Ping("now"))
        assert log == [("now", trio.lowlevel.current_task())]  # done, in the sender's task
    assert [r.envelope.payload for r in records if r.event is AuditEvent.DELIVERED] == [Ping("now")]


async def test_a_publish_runs_an_idle_subscribers_await_free_inline_handler_in_the_publishers_task() -> None:
    async with open_runtime() as rt:
        _, log, _ = await _listener(rt)
        await rt.client("publisher").publish(TOPIC, Ping("published"))
        assert log == [("published", trio.lowlevel.current_task())]


async def test_a_handler_that_awaits_or_is_not_inline_is_told_through_the_mailbox() -> None:
    async with open_runtime() as rt:
        ref, log, starts = await _listener(rt)
        sender = rt.client("sender")
        await sender.tell(ref, Yielding("awaits"))
        await sender.tell(ref, Plain("plain"))
        await trio.testing.wait_all_tasks_blocked()
        assert log == [("awaits", starts[0]), ("plain", starts[0])]  # both in the actor's own task


async def test_messages_queued_before_an_inline_eligible_tell_from_the_same_sender_are_handled_first() -> None:
    async with open_runtime() as rt:
        ref, log, starts = await _listener(rt)
        sender = rt.client("sender")
        sender.tell_nowait(ref, Plain("first"))
        sender.tell_nowait(ref, Plain("second"))
        await sender.tell(ref, Ping("third"))  # the mailbox is not empty: no inline run
        await trio.testing.wait_all_tasks_blocked()
        assert [text for text, _ in log] == ["first", "second", "third"]
        assert {task for _, task in log} == {starts[0]}


async def test_a_failing_inline_tell_does_not_reach_the_sender_and_restarts_the_actor(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime() as rt:
        ref, log, starts = await _listener(rt)
        sender = rt.client("sender")
        await sender.tell(ref, Boom())  # no exception here: a tell has no answer
        await trio.sleep(1)  # past the restart's backoff
        assert len(starts) == 2 and rt.statistics().restarts == 1
        await trio.testing.wait_all_tasks_blocked()
        await sender.tell(ref, Ping("after"))
        assert log == [("after", trio.lowlevel.current_task())]  # the new instance, inline again


async def test_with_inline_asks_off_a_tell_always_goes_through_the_mailbox() -> None:
    async with open_runtime(inline_asks=False) as rt:
        ref, log, starts = await _listener(rt)
        rt.client("sender").tell_nowait(ref, Ping("queued"))
        assert log == []
        await trio.testing.wait_all_tasks_blocked()
        assert log == [("queued", starts[0])]


async def test_a_tell_nowait_to_an_idle_actors_await_free_inline_handler_is_handled_before_it_returns() -> None:
    async with open_runtime() as rt:
        ref, log, starts = await _listener(rt)
        rt.client("sender").tell_nowait(ref, Ping("at once"))
        assert log == [("at once", trio.lowlevel.current_task())]


async def test_a_tell_nowait_behind_queued_mail_or_to_an_awaiting_handler_goes_through_the_mailbox() -> None:
    async with open_runtime() as rt:
        ref, log, starts = await _listener(rt)
        sender = rt.client("sender")
        sender.tell_nowait(ref, Yielding("awaits"))
        sender.tell_nowait(ref, Ping("behind it"))  # the mailbox holds one: no inline run
        assert log == []
        await trio.testing.wait_all_tasks_blocked()
        assert log == [("awaits", starts[0]), ("behind it", starts[0])]
