"""Tells and publishes to a plain ``def`` handler (``@handler(inline=True)``) go through the
mailbox like any other: handled in the actor's own task, in mailbox order, never in the sender's."""

from __future__ import annotations

import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import Message
from livecontext.runtime import Actor, ActorRef, AuditEvent, AuditRecord, Runtime, handler, open_runtime

TOPIC = "inline.tells"


@frozen
class Ping(Message):
    """Handled by a plain def, without an await."""

    text: str


@frozen
class Yielding(Message):
    """Handled with an await."""

    text: str


@frozen
class Plain(Message):
    text: str


@frozen
class Boom(Message):
    """Handled by a plain def, by raising."""


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


async def test_a_tell_to_an_idle_actors_plain_def_handler_is_handled_in_the_actors_own_task() -> None:
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref, log, starts = await _listener(rt)
        await rt.client("sender").tell(ref, Ping("now"))
        await trio.testing.wait_all_tasks_blocked()
        assert log == [("now", starts[0])]
    assert [r.envelope.payload for r in records if r.event is AuditEvent.DELIVERED] == [Ping("now")]


async def test_a_publish_to_an_idle_subscribers_plain_def_handler_is_handled_in_the_subscribers_task() -> None:
    async with open_runtime() as rt:
        _, log, starts = await _listener(rt)
        await rt.client("publisher").publish(TOPIC, Ping("published"))
        await trio.testing.wait_all_tasks_blocked()
        assert log == [("published", starts[0])]


async def test_a_tell_nowait_to_an_idle_actors_plain_def_handler_is_only_queued_when_it_returns() -> None:
    async with open_runtime() as rt:
        ref, log, starts = await _listener(rt)
        rt.client("sender").tell_nowait(ref, Ping("queued"))
        assert log == []  # nothing runs in the sender's task
        assert not rt.is_idle(ref)  # it has a message to handle
        await trio.testing.wait_all_tasks_blocked()
        assert log == [("queued", starts[0])]


async def test_handlers_that_await_and_plain_def_handlers_are_handled_in_mailbox_order() -> None:
    async with open_runtime() as rt:
        ref, log, starts = await _listener(rt)
        sender = rt.client("sender")
        sender.tell_nowait(ref, Plain("first"))
        sender.tell_nowait(ref, Yielding("second"))
        await sender.tell(ref, Ping("third"))
        sender.tell_nowait(ref, Plain("fourth"))
        await trio.testing.wait_all_tasks_blocked()
        assert [text for text, _ in log] == ["first", "second", "third", "fourth"]
        assert {task for _, task in log} == {starts[0]}


async def test_a_failing_plain_def_tell_does_not_reach_the_sender_and_restarts_the_actor(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime() as rt:
        ref, log, starts = await _listener(rt)
        sender = rt.client("sender")
        await sender.tell(ref, Boom())  # no exception here: a tell has no answer
        await trio.sleep(1)  # past the restart's backoff
        assert len(starts) == 2 and rt.statistics().restarts == 1
        await sender.tell(ref, Ping("after"))
        await trio.testing.wait_all_tasks_blocked()
        assert log == [("after", starts[1])]  # the new instance, in its own task
