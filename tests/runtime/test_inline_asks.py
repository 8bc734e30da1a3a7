"""Inline asks: an ask for a ``@handler(inline=True)`` that finds the actor idle runs the
handler in the asker's task, with the same ordering, supervision and safety as the mailbox."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol import ActorId, Envelope, Message, message_id_time_ns
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
from tests.support.cycle_messages import AskOn, Caught, CaughtList, Via, relay


@frozen
class Query(Message):
    """Handled inline: recorded, answered with ``Answer(text + "!")``."""

    text: str


@frozen
class PlainQuery(Message):
    """The same as :class:`Query`, with a plain (not inline) handler."""

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
    """Handled inline: waits for the test's gate, then answers (or fails, if ``fail``)."""

    text: str
    fail: bool = False


@frozen
class DeferIt(Message):
    """Handled inline: defers its reply; a background task answers once the gate opens (if ``answer``)."""

    answer: bool


@frozen
class Misuse(Message):
    """Handled inline: raises UsageError."""

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
    async def on_query(self, msg: Query) -> Answer:
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

    @handler(inline=True)
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
    async def on_defer(self, msg: DeferIt) -> Answer:
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
    async def on_misuse(self, msg: Misuse) -> None:
        self.shared.tasks["misuse"] = trio.lowlevel.current_task()
        raise UsageError(msg.text)

    @handler(inline=True)
    async def on_stats(self, msg: Stats) -> StatsReply:
        return StatsReply(self.generation, tuple(self.notes))


@asynccontextmanager
async def gated(shared: Shared, asker: Callable[[], Awaitable[None]], *,
                wait_entered: bool = True) -> AsyncIterator[trio.Nursery]:
    """Run ``asker`` in its own task (recorded as ``shared.tasks["asker"]``); inside the block
    its inline handler waits at the gate. Leaving opens the gate (also after a failed check,
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


async def test_an_inline_ask_to_an_idle_actor_runs_in_the_askers_task_and_is_audited_as_usual() -> None:
    shared = Shared()
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref = await _spawn_probe(rt, shared)
        reply = await rt.client("asker").ask(ref, Query("hello"))
        assert reply == Answer("hello!")
        assert shared.tasks["hello"] is trio.lowlevel.current_task()
        assert shared.tasks["hello"] is not shared.actor_tasks[0]
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


async def test_with_inline_asks_off_an_inline_handler_runs_in_the_actors_own_task() -> None:
    shared = Shared()
    async with open_runtime(inline_asks=False) as rt:
        ref = await _spawn_probe(rt, shared)
        assert await rt.client("asker").ask(ref, Query("mailbox")) == Answer("mailbox!")
        assert shared.tasks["mailbox"] is not trio.lowlevel.current_task()
        assert shared.tasks["mailbox"] is shared.actor_tasks[0]


async def test_tells_queued_before_an_inline_ask_from_the_same_sender_are_handled_first() -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        client = rt.client("sender")
        # the loop is parked on an empty mailbox; these tells do not yield, so all three are
        # still queued (the loop has not run yet) when the inline ask is made
        await client.tell(ref, Note("A1"))
        await client.tell(ref, Note("A2"))
        await client.tell(ref, Note("A3"))
        assert shared.log == [("start", 1)]
        assert await client.ask(ref, Query("B")) == Answer("B!")
        assert shared.log == [("start", 1), "A1", "A2", "A3", "B"]
        # the same ask once the mailbox is empty again does run inline: only the queued
        # tells kept "B" out of the asker's task
        await trio.testing.wait_all_tasks_blocked()
        assert await client.ask(ref, Query("B2")) == Answer("B2!")
        assert shared.tasks["B2"] is trio.lowlevel.current_task()
        assert shared.tasks["B"] is shared.actor_tasks[0]


async def test_a_message_told_while_an_inline_handler_runs_waits_until_that_handler_returns() -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        replies: list[object] = []

        async def asker() -> None:
            replies.append(await rt.client("asker").ask(ref, Gated("inline")))

        async with gated(shared, asker):
            await rt.client("other").tell(ref, Note("told meanwhile"))
            await trio.testing.wait_all_tasks_blocked()
            assert shared.log == [("start", 1), "inline start"]  # not handled while it runs
        await trio.testing.wait_all_tasks_blocked()
        assert shared.tasks["inline"] is shared.tasks["asker"]  # it really ran inline
        assert replies == [Answer("inline!")]
        assert shared.log == [("start", 1), "inline start", "inline end", "told meanwhile"]


async def test_a_failing_inline_handler_answers_the_asker_restarts_the_actor_and_keeps_the_queued_message(
    autojump_clock: trio.testing.MockClock,
) -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        errors: list[RemoteActorError] = []

        async def asker() -> None:
            with pytest.raises(RemoteActorError) as info:
                await rt.client("asker").ask(ref, Gated("doomed", fail=True))
            errors.append(info.value)

        async with gated(shared, asker):
            await rt.client("other").tell(ref, Note("queued during the failure"))
            await trio.testing.wait_all_tasks_blocked()
            assert "queued during the failure" not in shared.log
        assert shared.tasks["doomed"] is shared.tasks["asker"]  # it really ran inline
        assert len(errors) == 1
        assert str(errors[0]) == "probe/p failed handling the request: ValueError: doomed failed"
        assert errors[0].error_type == "ValueError"
        stats = await rt.client("checker").ask(ref, Stats())
        assert stats == StatsReply(generation=2, notes=("queued during the failure",))
        assert shared.starts == 2
        assert shared.log == [("start", 1), "doomed start", "doomed end", ("start", 2),
                              "queued during the failure"]
        assert rt.statistics().restarts == 1
        # the restarted actor serves inline asks again
        await trio.testing.wait_all_tasks_blocked()
        assert await rt.client("again").ask(ref, Query("after")) == Answer("after!")
        assert shared.tasks["after"] is trio.lowlevel.current_task()


async def test_a_failing_inline_handler_with_nothing_queued_still_restarts_the_actor(
    autojump_clock: trio.testing.MockClock,
) -> None:
    shared = Shared()
    shared.gate.set()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        client = rt.client("asker")
        with pytest.raises(RemoteActorError, match=r"^probe/p failed handling the request: ValueError: alone failed$"):
            await client.ask(ref, Gated("alone", fail=True))
        assert shared.tasks["alone"] is trio.lowlevel.current_task()
        assert await client.ask(ref, Stats()) == StatsReply(generation=2, notes=())
        assert shared.starts == 2
        assert rt.statistics().restarts == 1


async def test_cancelling_the_asker_does_not_cut_an_inline_handler_short_and_the_ask_ends_cancelled_after_it() -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        outcome: list[object] = []
        scope = trio.CancelScope()

        async def asker() -> None:
            with scope:
                try:
                    reply = await rt.client("asker").ask(ref, Gated("shielded"))
                except trio.Cancelled:
                    outcome.append(("ask cancelled", list(shared.log)))
                    raise
                outcome.append(("ask returned", reply))
            outcome.append(("cancelled_caught", scope.cancelled_caught))

        async with gated(shared, asker):
            scope.cancel()
            await trio.testing.wait_all_tasks_blocked()
            # the handler is not cut short, and the asker is still inside it
            assert shared.log == [("start", 1), "shielded start"]
            assert outcome == []
        assert shared.tasks["shielded"] is shared.tasks["asker"]  # it really ran inline
        assert shared.log == [("start", 1), "shielded start", "shielded end"]
        assert outcome == [
            ("ask cancelled", [("start", 1), "shielded start", "shielded end"]),
            ("cancelled_caught", True),
        ]


async def test_a_deferred_reply_from_an_inline_handler_reaches_the_asker(
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
        assert shared.tasks["defer"] is shared.tasks["asker"]  # it really ran inline
        assert rt.statistics().pending_asks == 0


async def test_a_deferred_reply_never_sent_ends_the_inline_ask_at_its_timeout(
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
        assert shared.tasks["defer"] is trio.lowlevel.current_task()
        assert rt.statistics().pending_asks == 0
        assert shared.starts == 1  # a missing reply is no failure of the actor


class Relay(Actor):
    """Forwards ``AskOn`` along its path with ``ask`` (an inline handler); records cycle errors."""

    def __init__(self, caught: list[str], tasks: dict[str, trio.lowlevel.Task]) -> None:
        self.caught = caught
        self.tasks = tasks

    @handler(inline=True)
    async def on_ask_on(self, msg: AskOn) -> Via:
        self.tasks[str(self.ctx.self_id)] = trio.lowlevel.current_task()
        return await relay(self.ctx, msg, self.caught)

    @handler
    async def on_caught(self, msg: Caught) -> CaughtList:
        return CaughtList(tuple(self.caught))


class PlainRelay(Relay):
    """The same, with a plain handler for ``AskOn`` (so only the next actor runs inline)."""

    @handler
    async def on_ask_on(self, msg: AskOn) -> Via:
        return await super().on_ask_on(msg)


def _ids(*names: str) -> tuple[ActorId, ...]:
    return tuple(ActorId("relay", n) for n in names)


@pytest.mark.parametrize("first", [Relay, PlainRelay], ids=["both-inline", "only-the-second-inline"])
async def test_an_ask_cycle_through_inline_handlers_is_detected_at_once(
    first: type[Relay], autojump_clock: trio.testing.MockClock,
) -> None:
    caught_a: list[str] = []
    caught_b: list[str] = []
    tasks: dict[str, trio.lowlevel.Task] = {}
    async with open_runtime() as rt:
        a = await rt.spawn(lambda: first(caught_a, tasks), "relay/a")
        b = await rt.spawn(lambda: Relay(caught_b, tasks), "relay/b")
        await trio.testing.wait_all_tasks_blocked()
        client = rt.client("t")
        start = trio.current_time()
        with pytest.raises(RemoteActorError, match=r"^relay/a failed handling the request: RemoteActorError: "
                                                   r"relay/b failed handling the request: AskCycleError: "
                                                   r"ask cycle \(deadlock\): relay/b -> relay/a -> relay/b; "
                                                   r"each actor waits"):
            await client.ask(a, AskOn(_ids("b", "a")))  # a asks b, whose handler asks a
        assert trio.current_time() == start  # at once, not at a timeout
        # b ran inline, in the task of its asker (a's handler)
        assert tasks["relay/b"] is tasks["relay/a"]
        if first is Relay:
            assert tasks["relay/a"] is trio.lowlevel.current_task()
        assert caught_b == [
            "ask cycle (deadlock): relay/b -> relay/a -> relay/b; each actor waits for the next inside "
            "a handler. Break the cycle with tell, or ask from a background task",
        ]
        assert caught_a == []
        # both actors still serve (after their restarts), and the wait graph holds no stale edge
        assert await client.ask(b, AskOn(_ids("a"))) == Via(("relay/b", "relay/a"))
        assert await client.ask(a, AskOn(_ids("b"))) == Via(("relay/a", "relay/b"))


async def test_a_usage_error_from_an_inline_handler_reaches_the_asker_without_restarting_the_actor(
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
        assert info.value.error_type == "UsageError"
        assert shared.tasks["misuse"] is trio.lowlevel.current_task()  # it really ran inline
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
    async def on_write(self, msg: Write) -> Answer:
        self.seen.append((msg.text, trio.lowlevel.current_task()))
        return Answer(msg.text)


async def test_an_inline_ask_still_needs_the_capability_the_actor_requires() -> None:
    seen: list[tuple[str, trio.lowlevel.Task]] = []
    async with open_runtime() as rt:
        ref = await rt.spawn(lambda: Vault(seen), "vault/v")
        await trio.testing.wait_all_tasks_blocked()
        me = trio.lowlevel.current_task()
        with pytest.raises(RemoteActorError, match=r"^vault/v failed handling the request: PermissionError: "
                                                   r"vault/v refuses Write: the sender lacks 'write'$"):
            await rt.client("nobody", capabilities=set()).ask(ref, Write("forbidden"))
        assert seen == [("denied", me)]  # refused on the inline path, the handler never ran
        await trio.testing.wait_all_tasks_blocked()
        assert await rt.client("writer", capabilities={"write"}).ask(ref, Write("allowed")) == Answer("allowed")
        assert seen == [("denied", me), ("allowed", me)]
        assert rt.statistics().restarts == 0


async def test_stopping_an_actor_waits_for_its_running_inline_handler_before_on_stop() -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        replies: list[object] = []

        async def asker() -> None:
            replies.append(await rt.client("asker").ask(ref, Gated("last")))

        async def stopper() -> None:
            await rt.stop(ref)
            shared.log.append("stop returned")

        async with gated(shared, asker) as nursery:
            nursery.start_soon(stopper)
            await trio.testing.wait_all_tasks_blocked()
            assert shared.log == [("start", 1), "last start"]  # on_stop waits for the handler
        assert shared.tasks["last"] is shared.tasks["asker"]  # it really ran inline
        assert replies == [Answer("last!")]
        assert shared.log == [("start", 1), "last start", "last end", "on_stop", "stop returned"]
        assert not rt.is_running(ref)


async def test_a_stop_whose_drain_times_out_still_returns_only_after_the_running_inline_handler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    shared = Shared()
    async with open_runtime() as rt:
        ref = await _spawn_probe(rt, shared)
        replies: list[object] = []

        async def asker() -> None:
            replies.append(await rt.client("asker").ask(ref, Gated("last")))

        async def stopper() -> None:
            await rt.stop(ref, drain_timeout=0.02)
            shared.log.append("stop returned")

        async with gated(shared, asker) as nursery:
            nursery.start_soon(stopper)
            await trio.sleep(1.0)  # far past the drain timeout: the actor's loop is cancelled
            assert "stop returned" not in shared.log  # but the inline handler still runs
        assert shared.tasks["last"] is shared.tasks["asker"]
        assert replies == [Answer("last!")]
        assert shared.log[-2:] == ["last end", "stop returned"]
        assert not rt.is_running(ref)


@frozen
class SlowDefer(Message):
    """Handled inline: takes ``seconds``, then defers its reply and never sends it."""

    seconds: float


class SlowDeferrer(Actor):
    @handler(inline=True)
    async def on_slow_defer(self, msg: SlowDefer) -> None:
        await trio.sleep(msg.seconds)
        self.ctx.defer_reply()


async def test_the_timeout_of_an_inline_ask_counts_from_the_ask_not_from_when_the_handler_returned(
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
    """Handled inline: starts a background task that fails once ``boom`` is set."""


class Crashy(Actor):
    def __init__(self, shared: Shared, boom: trio.Event) -> None:
        self.shared = shared
        self.boom = boom

    async def on_start(self) -> None:
        self.shared.starts += 1
        self.shared.log.append(("start", self.shared.starts))

    @handler(inline=True)
    async def on_arm(self, msg: Arm) -> None:
        async def fail_later() -> None:
            await self.boom.wait()
            raise RuntimeError("background task broke")

        self.ctx.nursery.start_soon(fail_later)

    @handler(inline=True)
    async def on_gated(self, msg: Gated) -> Answer:
        self.shared.log.append(f"{msg.text} start")
        self.shared.entered.set()
        await self.shared.gate.wait()
        self.shared.log.append(f"{msg.text} end")
        return Answer(msg.text + "!")


async def test_a_restart_waits_for_an_inline_handler_of_the_old_instance_so_two_never_run_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    shared, boom = Shared(), trio.Event()
    async with open_runtime() as rt:
        ref = await rt.spawn(lambda: Crashy(shared, boom), "crashy/c")
        await trio.testing.wait_all_tasks_blocked()
        await rt.client("armer").ask(ref, Arm())
        await trio.testing.wait_all_tasks_blocked()
        replies: list[object] = []

        async def asker() -> None:
            replies.append(await rt.client("asker").ask(ref, Gated("g")))

        async with gated(shared, asker):
            boom.set()  # the actor fails (in its background task) while "g" runs inline
            await trio.sleep(1.0)  # far past the restart's backoff
            assert shared.log == [("start", 1), "g start"]  # no second instance yet
        await trio.sleep(1.0)
        assert replies == [Answer("g!")]
        assert shared.log == [("start", 1), "g start", "g end", ("start", 2)]
        assert rt.statistics().restarts == 1
        assert rt.is_running(ref)


@frozen
class StopYourself(Message):
    pass


class SelfStopper(Actor):
    @handler(inline=True)
    async def on_stop_yourself(self, msg: StopYourself) -> Answer:
        await self.ctx.runtime.stop(self.ctx.self_id, drain_timeout=0.01)
        return Answer("stopped")


async def test_an_inline_handler_that_stops_its_own_actor_does_not_wait_for_itself(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(SelfStopper, "self/s")
        await trio.testing.wait_all_tasks_blocked()
        with trio.fail_after(5):
            assert await rt.client("asker").ask(ref, StopYourself()) == Answer("stopped")
        assert not rt.is_running(ref)


class Mixed(Actor):
    """Inline handlers with and without ``await``, and one plain handler."""

    def __init__(self, gate: trio.Event | None = None) -> None:
        self.gate = gate if gate is not None else trio.Event()
        self.seen: list[str] = []

    @handler(inline=True)
    async def on_query(self, msg: Query) -> Answer:  # no await: it cannot yield to Trio
        self.seen.append(msg.text)
        return Answer(msg.text + "!")

    @handler(inline=True)
    async def on_gated(self, msg: Gated) -> Answer:
        await self.gate.wait()
        self.seen.append(msg.text)
        return Answer(msg.text + "!")

    @handler(inline=True)
    async def on_note(self, msg: Note) -> None:
        async with trio.open_nursery():
            pass

    @handler
    async def on_plain(self, msg: PlainQuery) -> Answer:
        return Answer(msg.text)


def test_only_inline_handlers_without_await_are_known_never_to_yield() -> None:
    assert Mixed._inline == {"on_query", "on_gated", "on_note"}
    assert Mixed._inline_unawaiting == {"on_query"}
    assert Mixed._denial_unawaiting  # the default on_denied raises at once
    assert Vault._inline_unawaiting == {"on_write"}
    assert not Vault._denial_unawaiting  # its on_denied awaits


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


async def test_an_inline_ask_to_a_handler_without_await_opens_no_cancel_scope(
    scopes_entered: list[trio.CancelScope],
) -> None:
    gate = trio.Event()
    gate.set()
    async with open_runtime() as rt:
        ref = await rt.spawn(lambda: Mixed(gate), "mixed/m")
        await trio.testing.wait_all_tasks_blocked()
        client = rt.client("asker")
        scopes_entered.clear()
        assert await client.ask(ref, Query("q"), timeout=None) == Answer("q!")
        assert scopes_entered == []
        assert await client.ask(ref, Gated("g"), timeout=None) == Answer("g!")
        assert [scope.shield for scope in scopes_entered] == [True]  # an awaiting handler is shielded


async def test_an_inline_ask_refused_by_an_awaiting_on_denied_is_shielded_and_an_allowed_one_is_not(
    scopes_entered: list[trio.CancelScope],
) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(lambda: Vault([]), "vault/v")
        await trio.testing.wait_all_tasks_blocked()
        nobody, writer = rt.client("nobody", capabilities=set()), rt.client("writer", capabilities={"write"})
        scopes_entered.clear()
        assert await writer.ask(ref, Write("allowed"), timeout=None) == Answer("allowed")
        assert scopes_entered == []
        with pytest.raises(RemoteActorError):
            await nobody.ask(ref, Write("forbidden"), timeout=None)
        assert [scope.shield for scope in scopes_entered] == [True]


async def test_a_cancelled_asker_still_gets_a_handler_without_await_run_whole_and_then_the_cancel() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Mixed, "mixed/m")
        await trio.testing.wait_all_tasks_blocked()
        actor = ref._cell.instance
        with trio.CancelScope() as scope:
            scope.cancel()
            await rt.client("asker").ask(ref, Query("late"))
        assert scope.cancelled_caught
        assert actor.seen == ["late"]  # type: ignore[union-attr]


@frozen
class Peek(Message):
    """Handled at once (no await): keeps the envelope it came in."""


class Peeker(Actor):
    def __init__(self) -> None:
        self.seen: list[Envelope] = []

    @handler(inline=True)
    async def on_peek(self, msg: Peek) -> Answer:
        current = self.ctx.current
        assert current is not None
        self.seen.append(current)
        return Answer("peeked")


async def test_an_ask_answered_at_once_never_needs_its_message_id_made() -> None:
    async with open_runtime() as rt:
        peeker = Peeker()
        ref = await rt.spawn(lambda: peeker, "peek/p")
        await trio.testing.wait_all_tasks_blocked()
        assert await rt.client("asker").ask(ref, Peek()) == Answer("peeked")
        (env,) = peeker.seen
        with pytest.raises(AttributeError):  # the id's slot is still empty: nobody looked it up
            Envelope.message_id.__get__(env)  # type: ignore[attr-defined]
        # made when read, and sorting by the time it was sent
        assert abs(message_id_time_ns(env.message_id) - env.sent_at.timestamp() * 1e9) < 1e3
        assert rt.statistics().pending_asks == 0
