"""Ask cycles: a request/reply cycle between actors fails fast instead of deadlocking."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import ActorId, Message
from livecontext.runtime import (
    Actor,
    AskCycleError,
    DeadlockError,
    RemoteActorError,
    handler,
    open_runtime,
)
from livecontext.runtime.testing import actor_instance
from tests.support.cycle_messages import AskOn, Caught, CaughtList, Via, relay


@frozen
class AskLater(Message):
    """Start a background task that asks ``to`` for ``AskOn(back)``."""

    to: ActorId
    back: tuple[ActorId, ...]


@frozen
class BackgroundResult(Message):
    pass


@frozen
class BothAtOnce(Message):
    """From a nursery inside the handler, ask ``AskOn(())`` of ``first`` and ``AskOn(back)`` of ``second``."""

    first: ActorId
    second: ActorId
    back: tuple[ActorId, ...]


CAUGHT: dict[str, list[str]] = {}
"""The cycle errors each actor caught (kept across its restarts)."""


class Node(Actor):
    """Forwards ``AskOn`` along its path with ``ask``; records the cycle errors it catches."""

    def __init__(self) -> None:
        self.background: list[object] = []

    async def on_start(self) -> None:
        self.caught = CAUGHT.setdefault(str(self.ctx.self_id), [])

    @handler
    async def on_ask_on(self, msg: AskOn) -> Via:
        return await relay(self.ctx, msg, self.caught)

    @handler
    async def on_caught(self, msg: Caught) -> CaughtList:
        return CaughtList(tuple(self.caught))

    @handler
    async def on_ask_later(self, msg: AskLater) -> None:
        async def ask_in_background() -> None:
            try:
                self.background.append(await self.ctx.ask(msg.to, AskOn(msg.back), timeout=60))
            except Exception as exc:  # recorded for the test to see
                self.background.append(exc)

        self.ctx.nursery.start_soon(ask_in_background)

    @handler
    async def on_both(self, msg: BothAtOnce) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.ctx.ask, msg.first, AskOn(()))
            nursery.start_soon(self.ctx.ask, msg.second, AskOn(msg.back))


def _ids(*names: str) -> tuple[ActorId, ...]:
    return tuple(ActorId("actor", n) for n in names)


async def test_two_actors_asking_each_other_fail_fast_naming_the_cycle(autojump_clock: trio.testing.MockClock) -> None:
    CAUGHT.clear()
    async with open_runtime() as rt:
        a = await rt.spawn(Node, "actor/a")
        b = await rt.spawn(Node, "actor/b")
        client = rt.client("t")
        start = trio.current_time()
        with pytest.raises(RemoteActorError, match=r"AskCycleError: ask cycle \(deadlock\): "
                                                   r"actor/b -> actor/a -> actor/b; each actor waits"):
            await client.ask(a, AskOn(_ids("b", "a")))  # a asks b, whose handler asks a
        assert trio.current_time() == start  # at once, not at a timeout
        assert await client.ask(b, Caught()) == CaughtList((
            "ask cycle (deadlock): actor/b -> actor/a -> actor/b; each actor waits for the next inside "
            "a handler. Break the cycle with tell, or ask from a background task",
        ))


async def test_two_actors_asked_at_the_same_time_to_ask_each_other_do_not_hang(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime() as rt:
        a = await rt.spawn(Node, "actor/a")
        b = await rt.spawn(Node, "actor/b")
        results: list[object] = []

        async def ask(who: str, ref: object, path: tuple[ActorId, ...]) -> None:
            try:
                results.append(await rt.client(who).ask(ref, AskOn(path)))  # type: ignore[arg-type]
            except RemoteActorError as exc:
                results.append(exc)

        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "one", a, _ids("b"))  # a asks b ...
            nursery.start_soon(ask, "two", b, _ids("a"))  # ... while b asks a
        assert trio.current_time() - start < 1  # no more than a restart's backoff, not a timeout
        errors = [r for r in results if isinstance(r, RemoteActorError)]
        assert errors, "one of the two asks closes the cycle"
        assert any("ask cycle (deadlock): actor/" in str(e) for e in errors)


async def test_a_cycle_through_three_actors_is_detected() -> None:
    CAUGHT.clear()
    async with open_runtime() as rt:
        a = await rt.spawn(Node, "actor/a")
        await rt.spawn(Node, "actor/b")
        c = await rt.spawn(Node, "actor/c")
        client = rt.client("t")
        with pytest.raises(RemoteActorError, match=r"ask cycle \(deadlock\): actor/c -> actor/a -> actor/b -> actor/c"):
            await client.ask(a, AskOn(_ids("b", "c", "a")))
        caught = await client.ask(c, Caught())
        assert len(caught.errors) == 1
        assert caught.errors[0].startswith("ask cycle (deadlock): actor/c -> actor/a -> actor/b -> actor/c;")


async def test_an_actor_asking_itself_from_a_handler_fails_at_once() -> None:
    async with open_runtime() as rt:
        a = await rt.spawn(Node, "actor/a")
        with pytest.raises(RemoteActorError, match=r"ask cycle \(deadlock\): actor/a -> actor/a;"):
            await rt.client("t").ask(a, AskOn(_ids("a")))


async def test_the_cycle_error_lists_the_actors_in_wait_order() -> None:
    async with open_runtime() as rt:
        a = await rt.spawn(Node, "actor/a")
        await rt.spawn(Node, "actor/b")
        with pytest.raises(RemoteActorError):
            await rt.client("t").ask(a, AskOn(_ids("b", "a")))
    err = AskCycleError(_ids("b", "a", "b"))
    assert err.cycle == _ids("b", "a", "b")
    assert DeadlockError is AskCycleError


async def test_a_chain_of_asks_without_a_cycle_succeeds() -> None:
    async with open_runtime() as rt:
        a = await rt.spawn(Node, "actor/a")
        await rt.spawn(Node, "actor/b")
        await rt.spawn(Node, "actor/c")
        client = rt.client("t")
        assert await client.ask(a, AskOn(_ids("b", "c"))) == Via(("actor/a", "actor/b", "actor/c"))
        # the same actors, the other way round, once the first chain has finished
        c = rt.ref("actor/c")
        assert await client.ask(c, AskOn(_ids("b", "a"))) == Via(("actor/c", "actor/b", "actor/a"))


async def test_an_ask_from_a_background_task_is_not_a_cycle(autojump_clock: trio.testing.MockClock) -> None:
    async with open_runtime() as rt:
        a = await rt.spawn(Node, "actor/a")
        b = await rt.spawn(Node, "actor/b")
        # a's background task (started by a handler) asks b, whose handler asks a back:
        # a's mailbox is free, so a answers
        await rt.client("t").ask(a, AskLater(b.id, _ids("a")))
        await trio.testing.wait_all_tasks_blocked()
        actor = actor_instance(a)
        assert isinstance(actor, Node)
        assert actor.background == [Via(("actor/b", "actor/a"))]


async def test_asks_from_a_nursery_inside_a_handler_are_part_of_the_handler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime() as rt:
        a = await rt.spawn(Node, "actor/a")
        b = await rt.spawn(Node, "actor/b")
        c = await rt.spawn(Node, "actor/c")
        start = trio.current_time()
        with pytest.raises(RemoteActorError, match=r"^actor/a failed handling the request: ExceptionGroup: "
                                                   r"Exceptions from Trio nursery: "
                                                   r"RemoteActorError: actor/c failed handling the request: "
                                                   r"AskCycleError: ask cycle \(deadlock\): actor/c -> actor/a -> actor/c;"):
            await rt.client("t").ask(a, BothAtOnce(b.id, c.id, _ids("a")))
        assert trio.current_time() == start
