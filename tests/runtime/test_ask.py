"""ask: replies correlated by id, timeouts, late replies, remote errors, stopped actors."""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import ErrorReply, Message
from livecontext.runtime import (
    Actor,
    ActorStoppedError,
    AskTimeoutError,
    AuditEvent,
    AuditRecord,
    RemoteActorError,
    RestartPolicy,
    UnknownActorError,
    handler,
    open_runtime,
)


@frozen
class Double(Message):
    n: int


@frozen
class Doubled(Message):
    n: int


@frozen
class Slow(Message):
    seconds: float


@frozen
class Fail(Message):
    text: str


@frozen
class Note(Message):
    text: str


@frozen
class Hits(Message):
    pass


@frozen
class HitCount(Message):
    n: int


@frozen
class Hang(Message):
    pass


@frozen
class Explode(Message):
    pass


@frozen
class Raise(Message):
    """Raise the error made by ``Worker.errors[kind]``."""

    kind: str


@frozen
class FailLater(Message):
    pass


@frozen
class Forge(Message):
    pass


class DiskFullError(Exception):
    """A user's own error class."""


class Mine:
    class ActorStoppedError(Exception):  # noqa: N818
        """Named like the kernel's error, but a handler's own."""


async def _raise(error: Exception) -> None:
    raise error


class Worker(Actor):
    starts = 0

    def __init__(self) -> None:
        self.hits = 0

    async def on_start(self) -> None:
        Worker.starts += 1

    @handler
    async def on_double(self, msg: Double) -> Doubled:
        self.hits += 1
        await trio.sleep(0)
        return Doubled(msg.n * 2)

    @handler
    async def on_slow(self, msg: Slow) -> Doubled:
        await trio.sleep(msg.seconds)
        return Doubled(0)

    @handler
    async def on_fail(self, msg: Fail) -> None:
        raise ValueError(msg.text)

    @handler
    async def on_note(self, msg: Note) -> None:
        self.hits += 1

    @handler
    async def on_hits(self, msg: Hits) -> HitCount:
        return HitCount(self.hits)

    @handler
    async def on_hang(self, msg: Hang) -> None:
        await trio.sleep_forever()

    @handler
    async def on_raise(self, msg: Raise) -> None:
        if msg.kind == "group":
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_raise, DiskFullError("disk full"))
                nursery.start_soon(_raise, KeyError("no key"))
        raise {"disk": DiskFullError("disk full"), "named": Mine.ActorStoppedError("not the kernel's")}[msg.kind]

    @handler
    async def on_forge(self, msg: Forge) -> ErrorReply:
        return ErrorReply("builtins.KeyError", "made by hand")

    @handler
    async def on_fail_later(self, msg: FailLater) -> None:
        reply = self.ctx.defer_reply()
        assert reply is not None
        reply.fail(DiskFullError("found full later"))

    @handler
    async def on_explode(self, msg: Explode) -> None:
        async def boom() -> None:
            await trio.sleep(1)
            raise RuntimeError("background task failed")

        self.ctx.nursery.start_soon(boom)
        await trio.sleep_forever()


async def test_ask_returns_the_handlers_reply() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Worker, "worker/w")
        assert await rt.client("t").ask(ref, Double(21)) == Doubled(42)


async def test_concurrent_asks_each_get_the_reply_to_their_own_request() -> None:
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref = await rt.spawn(Worker, "worker/w")
        results: dict[int, object] = {}

        async def ask(n: int) -> None:
            results[n] = await rt.client(f"c{n}").ask(ref, Double(n))

        async with trio.open_nursery() as nursery:
            for n in range(20):
                nursery.start_soon(ask, n)
    assert results == {n: Doubled(2 * n) for n in range(20)}
    requests = {r.envelope.message_id: r.envelope for r in records if r.event is AuditEvent.DELIVERED}
    replies = [r.envelope for r in records if r.event is AuditEvent.REPLIED]
    assert len(replies) == 20
    for reply in replies:
        request = requests[reply.correlation_id]  # type: ignore[index]
        assert reply.recipient == request.sender
        assert isinstance(reply.payload, Doubled) and isinstance(request.payload, Double)
        assert reply.payload.n == 2 * request.payload.n


async def test_an_ask_without_a_reply_in_time_raises_ask_timeout_error(autojump_clock: trio.testing.MockClock) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Worker, "worker/w")
        start = trio.current_time()
        with pytest.raises(AskTimeoutError,
                           match=r"^ask Slow to worker/w got no reply within 1.5 s; the actor may be slow "
                                 r"or blocked: raise the timeout or check what it waits for$") as info:
            await rt.client("t").ask(ref, Slow(10), timeout=1.5)
        assert trio.current_time() - start == pytest.approx(1.5)
        assert info.value.timeout == 1.5
        assert info.value.message_type == "Slow"


async def test_a_late_reply_is_an_audited_drop_naming_its_correlation_id_and_no_warning(
        autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture) -> None:
    records: list[AuditRecord] = []
    caplog.set_level(logging.WARNING, logger="livecontext")
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref = await rt.spawn(Worker, "worker/w")
        client = rt.client("t")
        with pytest.raises(AskTimeoutError):
            await client.ask(ref, Slow(5), timeout=1)
        await trio.sleep(10)  # the handler finishes and answers nobody
        assert await client.ask(ref, Double(1)) == Doubled(2)  # still serving
        assert rt.statistics().pending_asks == 0
    request = next(r.envelope for r in records if isinstance(r.envelope.payload, Slow))
    drops = [r for r in records if r.event is AuditEvent.DROPPED]
    assert len(drops) == 1
    assert drops[0].envelope.correlation_id == request.message_id
    assert drops[0].reason == (f"no caller waits for correlation id {request.message_id} "
                               "(the ask timed out or was cancelled)")
    assert "dropped" not in caplog.text  # (the asker was told it gave up: nothing to warn anyone of)


async def test_the_timeout_also_covers_waiting_for_room_in_a_full_mailbox(autojump_clock: trio.testing.MockClock) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Worker, "worker/w", mailbox_size=1)
        client = rt.client("t")
        await client.tell(ref, Hang())
        await client.tell(ref, Note("fills the mailbox"))
        start = trio.current_time()
        with pytest.raises(AskTimeoutError, match="ask Double to worker/w got no reply within 2 s"):
            await client.ask(ref, Double(1), timeout=2)
        assert trio.current_time() - start == pytest.approx(2)
        assert rt.statistics().pending_asks == 0


async def test_a_handler_error_reaches_the_asker_as_remote_actor_error_and_the_actor_restarts(
    autojump_clock: trio.testing.MockClock,
) -> None:
    Worker.starts = 0
    async with open_runtime() as rt:
        ref = await rt.spawn(Worker, "worker/w")
        client = rt.client("t")
        await client.tell(ref, Note("state before the crash"))
        with pytest.raises(RemoteActorError,
                           match=r"^worker/w failed handling the request: ValueError: no such file$") as info:
            await client.ask(ref, Fail("no such file"))
        assert info.value.error_class is ValueError
        assert isinstance(info.value.__cause__, ValueError) and str(info.value.__cause__) == "no such file"
        assert info.value.error == "no such file"
        assert await client.ask(ref, Hits()) == HitCount(0)  # a fresh instance
        assert Worker.starts == 2


async def test_an_asker_tells_a_handlers_errors_apart_by_their_class(
    autojump_clock: trio.testing.MockClock,
) -> None:
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref = await rt.spawn(Worker, "worker/w")
        try:
            await rt.client("t").ask(ref, Raise("disk"))
        except RemoteActorError as exc:
            assert exc.error_class is DiskFullError
            assert isinstance(exc.__cause__, DiskFullError) and str(exc.__cause__) == "disk full"
            assert exc.error_type == f"{__name__}.DiskFullError"
        else:
            pytest.fail("the ask did not raise")
    (reply,) = [r.envelope.payload for r in records if r.event is AuditEvent.REPLIED]
    assert reply == ErrorReply(f"{__name__}.DiskFullError", "disk full")  # the audit keeps plain data


async def test_an_error_class_named_like_actor_stopped_error_is_still_the_handlers_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Worker, "worker/w")
        with pytest.raises(RemoteActorError, match="ActorStoppedError: not the kernel's") as info:
            await rt.client("t").ask(ref, Raise("named"))
        assert info.value.error_class is Mine.ActorStoppedError


async def test_a_nursery_failure_in_a_handler_reaches_the_asker_with_every_error_it_holds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Worker, "worker/w")
        with pytest.raises(RemoteActorError, match=r"ExceptionGroup: Exceptions from Trio nursery: ") as info:
            await rt.client("t").ask(ref, Raise("group"))
        assert "DiskFullError: disk full" in info.value.error and "KeyError: 'no key'" in info.value.error
        assert info.value.error_class is ExceptionGroup
        group = info.value.__cause__
        assert isinstance(group, ExceptionGroup)
        assert sorted(type(e).__name__ for e in group.exceptions) == ["DiskFullError", "KeyError"]


async def test_a_deferred_reply_can_fail_the_ask_with_an_error_of_its_own() -> None:
    Worker.starts = 0
    async with open_runtime() as rt:
        ref = await rt.spawn(Worker, "worker/w")
        with pytest.raises(RemoteActorError, match="DiskFullError: found full later") as info:
            await rt.client("t").ask(ref, FailLater())
        assert isinstance(info.value.__cause__, DiskFullError)
        assert Worker.starts == 1  # a failed reply is no failure of the actor


async def test_an_error_reply_a_handler_makes_itself_reaches_the_asker_as_a_type_error_naming_it() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Worker, "worker/w")
        with pytest.raises(RemoteActorError, match=r"TypeError: worker/w answered with an ErrorReply it made "
                                                   r"\(builtins.KeyError: made by hand\); raise the exception") as info:
            await rt.client("t").ask(ref, Forge())
        assert info.value.error_class is TypeError  # not KeyError: nothing is taken from a name


async def test_an_ask_whose_handler_is_cancelled_by_a_failing_background_task_fails_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Worker, "worker/w")
        start = trio.current_time()
        with pytest.raises(RemoteActorError, match=r"worker/w failed handling the request: Cancelled: "
                                                   r"the handler was cancelled before it answered"):
            await rt.client("t").ask(ref, Explode(), timeout=30)
        assert trio.current_time() - start < 2  # not the ask's timeout
        await trio.testing.wait_all_tasks_blocked()
        assert rt.statistics().restarts == 1


async def test_ask_to_a_stopped_actor_raises_actor_stopped_error() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Worker, "worker/w")
        await rt.stop(ref)
        client = rt.client("t")
        with pytest.raises(ActorStoppedError, match=r"^actor worker/w is stopped: the Double was not delivered; "
                                                    r"spawn it again or send to a running actor$"):
            await client.ask(ref, Double(1))
        with pytest.raises(ActorStoppedError, match="the Note was not delivered"):
            await client.tell(ref, Note("x"))
        with pytest.raises(ActorStoppedError, match="the Note was not delivered"):
            client.tell_nowait(ref, Note("x"))


async def test_sending_to_an_id_never_spawned_raises_unknown_actor_error() -> None:
    async with open_runtime() as rt:
        with pytest.raises(UnknownActorError, match="no actor worker/ghost in this runtime; spawn it before sending to it"):
            await rt.client("t").ask(rt.ref("worker/ghost"), Double(1))


async def test_unknown_ref_lookup_raises_unknown_actor_error() -> None:
    async with open_runtime() as rt:
        with pytest.raises(UnknownActorError, match="no actor worker/ghost"):
            rt.ref("worker/ghost")


async def test_asks_left_in_a_stopped_actors_mailbox_get_actor_stopped_error_and_tells_are_audited_drops(
    autojump_clock: trio.testing.MockClock,
) -> None:
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref = await rt.spawn(Worker, "worker/w")
        client = rt.client("t")
        errors: list[BaseException] = []

        async def ask(message: Message) -> None:
            try:
                await client.ask(ref, message, timeout=60)
            except Exception as exc:
                errors.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, Hang())  # in the handler when the actor is stopped
            await trio.testing.wait_all_tasks_blocked()
            await client.tell(ref, Note("queued"))
            nursery.start_soon(ask, Double(1))  # queued
            await trio.testing.wait_all_tasks_blocked()
            start = trio.current_time()
            await rt.stop(ref, drain_timeout=1)
            assert trio.current_time() - start == pytest.approx(1)
        assert [type(e) for e in errors] == [ActorStoppedError, ActorStoppedError]
        assert {str(e) for e in errors} == {
            "actor worker/w is stopped: the Hang was not delivered; spawn it again or send to a running actor",
            "actor worker/w is stopped: the Double was not delivered; spawn it again or send to a running actor",
        }
    drops = [r for r in records if r.event is AuditEvent.DROPPED]
    assert [type(r.envelope.payload) for r in drops] == [Note]
    assert drops[0].reason == "worker/w stopped before handling it"


async def test_asks_left_in_the_mailbox_of_an_actor_stopped_by_its_failures_get_actor_stopped_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref = await rt.spawn(Worker, "worker/w", restart=RestartPolicy(max_restarts=0))
        client = rt.client("t")
        outcomes: list[object] = []

        async def ask(message: Message) -> None:
            try:
                outcomes.append(await client.ask(ref, message))
            except Exception as exc:
                outcomes.append(exc)

        async with trio.open_nursery() as nursery:
            await client.tell(ref, Slow(1))  # keeps the actor busy while the rest queues up
            await client.tell(ref, Fail("fatal"))
            await client.tell(ref, Note("after the failure"))
            nursery.start_soon(ask, Double(3))
        assert len(outcomes) == 1 and isinstance(outcomes[0], ActorStoppedError)
        assert not rt.is_running(ref)
        assert len(rt.failures) == 1
    assert [type(r.envelope.payload) for r in records if r.event is AuditEvent.DROPPED] == [Note]
