"""Asks to a plain ``def`` handler (``@handler(inline=True)``): through the mailbox like any
other, handled in the actor's own task, with the same ordering, supervision and safety."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import ActorId, Envelope, Message, message_id_time_ns
from tests.support.busy import busy_task
from livecontext.runtime import (
    Actor,
    AskTimeoutError,
    AuditEvent,
    AuditRecord,
    RemoteActorError,
    UsageError,
    handler,
    open_runtime,
)


@frozen
class Query(Message):
    """Handled by a plain def: recorded, answered with ``Answer(text + "!")``."""

    text: str


@frozen
class PlainQuery(Message):
    """The same as :class:`Query`, with an async handler."""

    text: str


@frozen
class Answer(Message):
    text: str


@frozen
class Note(Message):
    """A plain tell: recorded."""

    text: str


@frozen
class Gated(Message):
    """Handled by a plain def: waits for the test's gate, then answers (or fails, if ``fail``)."""

    text: str
    fail: bool = False


@frozen
class DeferIt(Message):
    """Handled by a plain def: defers its reply; a background task answers once the gate opens (if ``answer``)."""

    answer: bool


@frozen
class Fail(Message):
    """Handled by a plain def: raises ValueError."""

    text: str


@frozen
class Misuse(Message):
    """Handled by a plain def: raises UsageError."""

    text: str


@frozen
class Stats(Message):
    pass


@frozen
class StatsReply(Message):
    generation: int
    notes: tuple[str, ...]


class Shared:
    """What a test sees of a :class:`Probe`, kept across its restarts."""

    def __init__(self) -> None:
        self.log: list[object] = []
        self.starts = 0
        self.actor_tasks: list[trio.lowlevel.Task] = []
        """The task each start ran in: the actor's own task."""
        self.tasks: dict[str, trio.lowlevel.Task] = {}
        """The task each handler ran in, by the message's text."""
        self.entered = trio.Event()
        self.gate = trio.Event()


class Probe(Actor):
    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.generation = 0
        self.notes: list[str] = []

    async def on_start(self) -> None:
        self.shared.starts += 1
        self.generation = self.shared.starts
        self.shared.actor_tasks.append(trio.lowlevel.current_task())
        self.shared.log.append(("start", self.generation))

    async def on_stop(self) -> None:
        self.shared.log.append("on_stop")

    @handler(inline=True)
    def on_query(self, msg: Query) -> Answer:
        self.shared.tasks[msg.text] = trio.lowlevel.current_task()
        self.shared.log.append(msg.text)
        return Answer(msg.text + "!")

    @handler
    async def on_plain(self, msg: PlainQuery) -> Answer:
        self.shared.tasks[msg.text] = trio.lowlevel.current_task()
        self.shared.log.append(msg.text)
        return Answer(msg.text + "!")

    @handler
    async def on_note(self, msg: Note) -> None:
        self.shared.log.append(msg.text)
        self.notes.append(msg.text)

    @handler
    async def on_gated(self, msg: Gated) -> Answer:
        self.shared.tasks[msg.text] = trio.lowlevel.current_task()
        self.shared.log.append(f"{msg.text} start")
        self.shared.entered.set()
        await self.shared.gate.wait()
        self.shared.log.append(f"{msg.text} end")
        if msg.fail:
            raise ValueError(f"{msg.text} failed")
        return Answer(msg.text + "!")

    @handler(inline=True)
    def on_defer(self, msg: DeferIt) -> Answer:
        self.shared.tasks["defer"] = trio.lowlevel.current_task()
        pending = self.ctx.defer_reply()
        assert pending is not None
        if msg.answer:
            async def answer_later() -> None:
                await self.shared.gate.wait()
                pending.send(Answer("deferred"))

            self.ctx.nursery.start_soon(answer_later)
        return Answer("ignored: the reply is deferred")

    @handler(inline=True)
    def on_fail(self, msg: Fail) -> None:
        self.shared.tasks[msg.text] = trio.lowlevel.current_task()
        self.shared.log.append(msg.text)
        raise ValueError(f"{msg.text} failed")

    @handler(inline=True)
    def on_misuse(self, msg: Misuse) -> None:
        self.shared.tasks["misuse"] = trio.lowlevel.current_task()
        raise UsageError(msg.text)

    @handler(inline=True)
    def on_stats(self, msg: Stats) -> StatsReply:
        return StatsReply(self.generation, tuple(self.notes))


@asynccontextmanager
async def gated(shared: Shared, asker: Callable[[], Awaitable[None]], *,
                wait_entered: bool = True) -> AsyncIterator[trio.Nursery]:
    """Run ``asker`` in its own task (recorded as ``shared.tasks["asker"]``); inside the block
    its handler waits at the gate. Leaving opens the gate (also after a failed check,
    which must not hang) and waits for the asker."""
    async def run() -> None:
        shared.tasks["asker"] = trio.lowlevel.current_task()
        await asker()

    async with trio.open_nursery() as nursery:
        try:
            nursery.start_soon(run)
            if wait_entered:
                await shared.entered.wait()
            yield nursery
        finally:
            shared.gate.set()


async def _spawn_probe(rt, shared: Shared, name: str = "probe/p"):  # type: ignore[no-untyped-def]
    ref = await rt.spawn(lambda: Probe(shared), name)
    await trio.testing.wait_all_tasks_blocked()  # its loop is parked on an empty mailbox
    return ref


async def test_an_ask_to_an_idle_actors_plain_def_handler_runs_in_the_actors_task_and_is_audited_as_usual() -> None:
    shared = Shared()
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref = await _spawn_probe(rt, shared)
        reply = await rt.client("asker").ask(ref, Query("hello"))
        assert reply == Answer("hello!")
        assert shared.tasks["hello"] is shared.actor_tasks[0]
    delivered = [r.envelope for r in records if r.event is AuditEvent.DELIVERED]
    replied = [r.envelope for r in records if r.event is AuditEvent.REPLIED]
    assert [e.payload for e in delivered] == [Query("hello")]
    assert [e.payload for e in replied] == [Answer("hello!")]
    request, reply_env = delivered[0], replied[0]
    assert request.sender == ActorId("client", "asker")
    assert request.recipient == ActorId("probe", "p")
    assert reply_env.correlation_id == request.message_id
    assert reply_env.causation_id == request.message_id
    assert reply_env.sender == ActorId("probe", "p")
    assert reply_env.recipient == ActorId("client", "asker")
    assert not [r for r in records if r.event is AuditEvent.DROPPED]


async def test_a_plain_handler_never_runs_in_the_askers_task() -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        assert await rt.client("asker").ask(ref, PlainQuery("plain")) == Answer("plain!")
        assert shared.tasks["plain"] is not trio.lowlevel.current_task()
        assert shared.tasks["plain"] is shared.actor_tasks[0]


async def test_tells_queued_before_an_ask_from_the_same_sender_are_handled_first() -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        client = rt.client("sender")
        # the loop is parked on an empty mailbox; tell_nowait does not yield, so all three are
        # still queued (the loop has not run yet) when the ask is made
        client.tell_nowait(ref, Note("A1"))
        client.tell_nowait(ref, Note("A2"))
        client.tell_nowait(ref, Note("A3"))
        assert shared.log == [("start", 1)]
        assert await client.ask(ref, Query("B")) == Answer("B!")
        assert shared.log == [("start", 1), "A1", "A2", "A3", "B"]
        assert shared.tasks["B"] is shared.actor_tasks[0]


async def test_a_failing_plain_def_handler_answers_the_asker_restarts_the_actor_and_keeps_the_mail_queued_after(
    autojump_clock: trio.testing.MockClock,
) -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        client = rt.client("asker")
        with pytest.raises(RemoteActorError) as info:
            await client.ask(ref, Fail("doomed"))
        assert shared.tasks["doomed"] is shared.actor_tasks[0]
        assert str(info.value) == "probe/p failed handling the request: ValueError: doomed failed"
        assert info.value.error_class is ValueError and isinstance(info.value.__cause__, ValueError)
        client.tell_nowait(ref, Note("queued after the failure"))
        assert await client.ask(ref, Stats()) == StatsReply(generation=2, notes=("queued after the failure",))
        assert shared.log == [("start", 1), "doomed", ("start", 2), "queued after the failure"]
        assert rt.statistics().restarts == 1
        # the restarted actor serves asks again, in its new task
        assert await client.ask(ref, Query("after")) == Answer("after!")
        assert shared.tasks["after"] is shared.actor_tasks[1]


async def test_a_deferred_reply_from_a_plain_def_handler_reaches_the_asker(
    autojump_clock: trio.testing.MockClock,
) -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        replies: list[object] = []

        async def asker() -> None:
            replies.append(await rt.client("asker").ask(ref, DeferIt(answer=True), timeout=10))

        async with gated(shared, asker, wait_entered=False):
            await trio.sleep(1)
            assert replies == []  # the handler returned, its return value is not the reply
        assert replies == [Answer("deferred")]
        assert shared.tasks["defer"] is shared.actor_tasks[0]
        assert rt.statistics().pending_asks == 0


async def test_a_deferred_reply_never_sent_ends_the_ask_at_its_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        start = trio.current_time()
        with pytest.raises(AskTimeoutError, match=r"^ask DeferIt to probe/p got no reply within 3 s") as info:
            await rt.client("asker").ask(ref, DeferIt(answer=False), timeout=3)
        assert trio.current_time() - start == pytest.approx(3)
        assert info.value.timeout == 3
        assert shared.tasks["defer"] is shared.actor_tasks[0]
        assert rt.statistics().pending_asks == 0
        assert shared.starts == 1  # a missing reply is no failure of the actor


async def test_a_usage_error_from_a_plain_def_handler_reaches_the_asker_without_restarting_the_actor(
    autojump_clock: trio.testing.MockClock,
) -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        client = rt.client("asker")
        await client.tell(ref, Note("state kept"))
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(RemoteActorError, match=r"^probe/p failed handling the request: UsageError: bad flag$") as info:
            await client.ask(ref, Misuse("bad flag"))
        assert info.value.error_class is UsageError and isinstance(info.value.__cause__, UsageError)
        assert shared.tasks["misuse"] is shared.actor_tasks[0]
        await trio.sleep(5)  # any restart would have happened by now
        assert await client.ask(ref, Stats()) == StatsReply(generation=1, notes=("state kept",))
        assert shared.starts == 1
        assert rt.statistics().restarts == 0


@frozen
class Write(Message):
    text: str


class Vault(Actor):
    def __init__(self, seen: list[tuple[str, trio.lowlevel.Task]]) -> None:
        self.seen = seen

    def capability_for(self, message_type: type) -> Hashable | None:
        return "write" if message_type is Write else None

    async def on_denied(self, message: Message, capability: Hashable) -> Message | None:
        self.seen.append(("denied", trio.lowlevel.current_task()))
        return await super().on_denied(message, capability)

    @handler(inline=True)
    def on_write(self, msg: Write) -> Answer:
        self.seen.append((msg.text, trio.lowlevel.current_task()))
        return Answer(msg.text)


async def test_an_ask_to_a_plain_def_handler_needs_the_capability_the_actor_requires() -> None:
    seen: list[tuple[str, trio.lowlevel.Task]] = []
    async with open_runtime() as rt:
        ref = await rt.spawn(lambda: Vault(seen), "vault/v")
        await trio.testing.wait_all_tasks_blocked()
        me = trio.lowlevel.current_task()
        with pytest.raises(RemoteActorError, match=r"^vault/v failed handling the request: PermissionError: "
                                                   r"vault/v refuses Write: the sender lacks 'write'$"):
            await rt.client("nobody", capabilities=set()).ask(ref, Write("forbidden"))
        # refused by on_denied, in the actor's task: the handler never ran
        assert [what for what, _ in seen] == ["denied"] and seen[0][1] is not me
        assert await rt.client("writer", capabilities={"write"}).ask(ref, Write("allowed")) == Answer("allowed")
        assert seen[1] == ("allowed", seen[0][1])
        assert rt.statistics().restarts == 0


@frozen
class SlowDefer(Message):
    """Handled by a plain def: takes ``seconds``, then defers its reply and never sends it."""

    seconds: float


class SlowDeferrer(Actor):
    @handler
    async def on_slow_defer(self, msg: SlowDefer) -> None:
        await trio.sleep(msg.seconds)
        self.ctx.defer_reply()


async def test_the_timeout_of_an_ask_counts_from_the_ask_not_from_when_the_handler_returned(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(SlowDeferrer, "slow/s")
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        with pytest.raises(AskTimeoutError):
            await rt.client("asker").ask(ref, SlowDefer(2.0), timeout=3)
        assert trio.current_time() - start == pytest.approx(3)


@frozen
class Arm(Message):
    """Handled by a plain def: starts a background task that fails once ``boom`` is set."""


class Crashy(Actor):
    def __init__(self, shared: Shared, boom: trio.Event) -> None:
        self.shared = shared
        self.boom = boom

    async def on_start(self) -> None:
        self.shared.starts += 1
        self.shared.log.append(("start", self.shared.starts))

    @handler
    async def on_arm(self, msg: Arm) -> None:
        async def fail_later() -> None:
            await self.boom.wait()
            raise RuntimeError("background task broke")

        self.ctx.nursery.start_soon(fail_later)

    @handler
    async def on_gated(self, msg: Gated) -> Answer:
        self.shared.log.append(f"{msg.text} start")
        self.shared.entered.set()
        await self.shared.gate.wait()
        self.shared.log.append(f"{msg.text} end")
        return Answer(msg.text + "!")


@frozen
class StopYourself(Message):
    pass


class SelfStopper(Actor):
    @handler
    async def on_stop_yourself(self, msg: StopYourself) -> Answer:
        await self.ctx.runtime.stop(self.ctx.self_id, drain_timeout=0.01)
        return Answer("stopped")


class Mixed(Actor):
    """Inline handlers with and without ``await``, and one plain handler."""

    def __init__(self, gate: trio.Event | None = None) -> None:
        self.gate = gate if gate is not None else trio.Event()
        self.seen: list[str] = []

    @handler(inline=True)
    def on_query(self, msg: Query) -> Answer:  # no await: it cannot yield to Trio
        self.seen.append(msg.text)
        return Answer(msg.text + "!")

    @handler
    async def on_gated(self, msg: Gated) -> Answer:
        await self.gate.wait()
        self.seen.append(msg.text)
        return Answer(msg.text + "!")

    @handler
    async def on_note(self, msg: Note) -> None:
        async with trio.open_nursery():
            pass

    @handler
    async def on_plain(self, msg: PlainQuery) -> Answer:
        return Answer(msg.text)


@pytest.fixture
def scopes_entered(monkeypatch: pytest.MonkeyPatch) -> list[trio.CancelScope]:
    """Every cancel scope entered while the test runs."""
    entered: list[trio.CancelScope] = []
    real_enter = trio.CancelScope.__enter__

    def counting_enter(scope: trio.CancelScope) -> trio.CancelScope:
        entered.append(scope)
        return real_enter(scope)

    monkeypatch.setattr(trio.CancelScope, "__enter__", counting_enter)
    return entered


@frozen
class Peek(Message):
    """Handled at once (no await): keeps the envelope it came in."""


class Peeker(Actor):
    def __init__(self) -> None:
        self.seen: list[Envelope] = []

    @handler(inline=True)
    def on_peek(self, msg: Peek) -> Answer:
        current = self.ctx.current
        assert current is not None
        self.seen.append(current)
        return Answer("peeked")



def test_an_inline_async_handler_is_refused_when_its_class_is_defined() -> None:
    with pytest.raises(TypeError, match=r"^Waits\.on_query: an inline handler is called without await and may "
                                        r"not wait: make it a plain def, or drop inline=True$"):
        class Waits(Actor):
            @handler(inline=True)
            async def on_query(self, msg: Query) -> Answer:
                return Answer(msg.text)


async def test_an_ask_to_a_plain_def_handler_is_a_schedule_point() -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        client = rt.client("asker")
        async with busy_task() as other:
            for i in range(10):
                assert await client.ask(ref, Query(str(i))) == Answer(f"{i}!")
            # each ask let the other task run (Trio may order a batch of runnable tasks
            # either way, so the last one's turn may come after the loop)
            assert other.count >= 9
        assert all(shared.tasks[str(i)] is shared.actor_tasks[0] for i in range(10))


async def test_an_ask_to_a_plain_def_handler_is_a_cancel_point_before_it_is_sent() -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        client = rt.client("asker")
        with trio.CancelScope() as scope:
            scope.cancel()
            await client.ask(ref, Query("never"))
        assert scope.cancelled_caught
        assert "never" not in shared.log  # cancelled before it reached the actor
        with trio.CancelScope() as scope:
            scope.cancel()
            client.tell_nowait(ref, Note("no checkpoint"))  # (tell_nowait is not one)
            await client.tell(ref, Note("never told"))
        assert scope.cancelled_caught
        await trio.testing.wait_all_tasks_blocked()
        assert shared.log[-1] == "no checkpoint"


async def test_a_tell_to_a_plain_def_handler_is_a_schedule_point() -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        client = rt.client("sender")
        async with busy_task() as other:
            for _ in range(10):
                await client.tell(ref, Stats())
            assert other.count >= 9
