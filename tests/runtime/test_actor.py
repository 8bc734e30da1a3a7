"""Actors: typed handlers, dispatch, sender ids stamped by the runtime, causation ids."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import ActorId, Envelope, Message
from livecontext.runtime import (
    Actor,
    ActorRef,
    DuplicateActorError,
    RemoteActorError,
    UnhandledMessageError,
    handler,
    open_runtime,
)
from livecontext.runtime.testing import actor_instance


@frozen
class Add(Message):
    n: int


@frozen
class Get(Message):
    pass


@frozen
class Total(Message):
    value: int


@frozen
class Ping(Message):
    pass


@frozen
class Shape(Message):
    name: str


@frozen
class Circle(Shape):
    radius: float


@frozen
class Square(Shape):
    side: float


@frozen
class Forward(Message):
    """Tell ``Add(n)`` to the actor ``to``."""

    to: ActorId
    n: int


@frozen
class BadReply(Message):
    pass


class Counter(Actor):
    def __init__(self) -> None:
        self.total = 0
        self.senders: list[ActorId] = []
        self.envelopes: list[Envelope] = []

    @handler
    async def on_add(self, msg: Add) -> None:
        assert self.ctx.current is not None
        self.senders.append(self.ctx.current.sender)
        self.envelopes.append(self.ctx.current)
        self.total += msg.n

    @handler
    async def on_get(self, msg: Get) -> Total:
        return Total(self.total)

    @handler
    async def on_bad(self, msg: BadReply) -> Total:
        return 42  # type: ignore[return-value]


class Relay(Actor):
    def __init__(self) -> None:
        self.handled: list[Envelope] = []

    @handler
    async def on_forward(self, msg: Forward) -> None:
        assert self.ctx.current is not None
        self.handled.append(self.ctx.current)
        await self.ctx.tell(msg.to, Add(msg.n))


class Shapes(Actor):
    def __init__(self) -> None:
        self.seen: list[str] = []

    @handler
    async def on_shape(self, msg: Shape) -> None:
        self.seen.append(f"shape:{msg.name}")

    @handler
    async def on_circle(self, msg: Circle) -> None:
        self.seen.append(f"circle:{msg.name}")


class LoudCounter(Counter):
    @handler
    async def on_add_loudly(self, msg: Add) -> None:
        self.total += 10 * msg.n


async def test_each_message_type_goes_to_its_own_handler() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Counter, "counter/c")
        client = rt.client("test")
        await client.tell(ref, Add(2))
        await client.tell(ref, Add(3))
        assert await client.ask(ref, Get()) == Total(5)


async def test_a_handler_for_a_base_message_type_also_handles_its_subclasses() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Shapes, "shapes/s")
        client = rt.client("test")
        await client.tell(ref, Square("sq", 2.0))
        await client.tell(ref, Circle("ci", 1.0))
        await client.tell(ref, Shape("plain"))
        await client.ask(ref, Shape("sync"))
        instance = actor_instance(ref)
        assert isinstance(instance, Shapes)
        assert instance.seen == ["shape:sq", "circle:ci", "shape:plain", "shape:sync"]


async def test_a_subclass_actor_inherits_handlers_and_may_override_one() -> None:
    assert set(LoudCounter.handled_types()) == {Add, Get, BadReply}
    async with open_runtime() as rt:
        ref = await rt.spawn(LoudCounter, "counter/loud")
        client = rt.client("test")
        await client.tell(ref, Add(1))
        assert await client.ask(ref, Get()) == Total(10)


async def test_telling_an_unhandled_type_raises_at_the_sender_naming_the_actor_and_what_it_handles() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Counter, "counter/c")
        client = rt.client("test")
        with pytest.raises(UnhandledMessageError,
                           match=r"^actor counter/c has no handler for Ping; it handles: Add, Get, BadReply$") as info:
            await client.tell(ref, Ping())
        assert info.value.actor == ActorId("counter", "c")
        assert info.value.message_type == "Ping"
        assert info.value.handled == ("Add", "Get", "BadReply")
        with pytest.raises(UnhandledMessageError, match="no handler for Ping"):
            await client.ask(ref, Ping())
        with pytest.raises(UnhandledMessageError, match="no handler for Ping"):
            client.tell_nowait(ref, Ping())
        assert await client.ask(ref, Get()) == Total(0)  # still serving


async def test_an_ask_whose_handler_returns_something_that_is_not_a_message_fails_at_the_asker() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Counter, "counter/c")
        client = rt.client("test")
        with pytest.raises(RemoteActorError,
                           match=r"counter/c failed handling the request: TypeError: "
                                 r"Counter.on_bad returned int, not a Message"):
            await client.ask(ref, BadReply())
        assert await client.ask(ref, Get()) == Total(0)


async def test_an_ask_whose_handler_returns_none_returns_none() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Counter, "counter/c")
        assert await rt.client("test").ask(ref, Add(1)) is None


def test_a_handler_that_is_not_async_is_refused() -> None:
    with pytest.raises(TypeError, match=r"@handler needs an 'async def' method, got <function"):
        class Sync(Actor):
            @handler  # type: ignore[type-var]
            def on_ping(self, msg: Ping) -> None:
                pass


def test_a_handler_whose_parameter_is_not_a_message_type_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Untyped.on_ping: annotate the message parameter with a Message subclass, got None"):
        class Untyped(Actor):
            @handler
            async def on_ping(self, msg) -> None:  # type: ignore[no-untyped-def]
                pass

    with pytest.raises(TypeError, match=r"NotAMessage.on_int: annotate the message parameter with a Message subclass, got <class 'int'>"):
        class NotAMessage(Actor):
            @handler
            async def on_int(self, msg: int) -> None:
                pass


def test_a_handler_with_the_wrong_number_of_parameters_is_refused() -> None:
    with pytest.raises(TypeError, match=r"TwoArgs.on_two: a handler takes \(self, message\), got 3 parameters"):
        class TwoArgs(Actor):
            @handler
            async def on_two(self, msg: Ping, extra: int) -> None:
                pass


def test_two_handlers_for_one_message_type_in_one_class_are_refused() -> None:
    with pytest.raises(TypeError, match=r"Twice.on_a and Twice.on_b both handle Ping: keep one handler per message type"):
        class Twice(Actor):
            @handler
            async def on_a(self, msg: Ping) -> None:
                pass

            @handler
            async def on_b(self, msg: Ping) -> None:
                pass


async def test_the_handler_sees_the_true_sender_stamped_by_the_runtime() -> None:
    async with open_runtime() as rt:
        counter = await rt.spawn(Counter, "counter/c")
        relay = await rt.spawn(Relay, "relay/r")
        client = rt.client("alice")
        await client.tell(counter, Add(1))
        await client.ask(relay, Forward(counter.id, 2))
        await client.ask(counter, Get())
        instance = actor_instance(counter)
        assert isinstance(instance, Counter)
        assert instance.senders == [ActorId("client", "alice"), ActorId("relay", "r")]
        assert instance.envelopes[0].recipient == counter.id


async def test_a_clients_id_is_client_slash_its_name() -> None:
    async with open_runtime() as rt:
        assert rt.client("cli").self_id == ActorId("client", "cli")


async def test_duplicate_ids_are_refused() -> None:
    async with open_runtime() as rt:
        await rt.spawn(Counter, "counter/c")
        with pytest.raises(DuplicateActorError, match=r"an actor counter/c is already running; stop it first or pick another name"):
            await rt.spawn(Counter, "counter/c")
        rt.client("x")
        with pytest.raises(DuplicateActorError, match="an actor client/x is already running"):
            rt.client("x")
        with pytest.raises(DuplicateActorError, match="an actor client/x is already running"):
            await rt.spawn(Counter, "client/x")


async def test_an_id_can_be_spawned_again_after_its_actor_stopped() -> None:
    async with open_runtime() as rt:
        first = await rt.spawn(Counter, "counter/c")
        client = rt.client("t")
        await client.tell(first, Add(5))
        await rt.stop(first)
        second = await rt.spawn(Counter, "counter/c")
        assert await client.ask(second, Get()) == Total(0)
        assert await client.ask(first, Get()) == Total(0)  # an old ref reaches the new actor by id
        assert rt.ref("counter/c") == second


async def test_messages_sent_from_a_handler_carry_the_handled_message_id_as_causation_id() -> None:
    async with open_runtime() as rt:
        counter = await rt.spawn(Counter, "counter/c")
        relay = await rt.spawn(Relay, "relay/r")
        client = rt.client("t")
        await client.ask(relay, Forward(counter.id, 1))
        await client.ask(counter, Get())
        relay_actor, counter_actor = actor_instance(relay), actor_instance(counter)
        assert isinstance(relay_actor, Relay) and isinstance(counter_actor, Counter)
        forwarded = counter_actor.envelopes[0]
        assert forwarded.causation_id == relay_actor.handled[0].message_id
        assert relay_actor.handled[0].causation_id is None  # sent by a client, outside any handler


async def test_an_actor_handles_one_message_at_a_time(autojump_clock: trio.testing.MockClock) -> None:
    running = 0
    most = 0

    class Slow(Actor):
        @handler
        async def on_ping(self, msg: Ping) -> None:
            nonlocal running, most
            running += 1
            most = max(most, running)
            await trio.sleep(1)
            running -= 1

    async with open_runtime() as rt:
        ref = await rt.spawn(Slow, "slow/s")
        async with trio.open_nursery() as nursery:
            for i in range(5):
                nursery.start_soon(rt.client(f"c{i}").ask, ref, Ping())
    assert most == 1


async def test_on_start_runs_before_the_first_message_and_on_stop_after_the_last() -> None:
    log: list[str] = []

    class Lifecycle(Actor):
        async def on_start(self) -> None:
            log.append("start")

        async def on_stop(self) -> None:
            log.append("stop")

        @handler
        async def on_ping(self, msg: Ping) -> None:
            log.append("ping")

    async with open_runtime() as rt:
        ref = await rt.spawn(Lifecycle, "life/l")
        assert log == ["start"]
        await rt.client("t").tell(ref, Ping())
    assert log == ["start", "ping", "stop"]


async def test_only_a_running_actor_has_a_nursery() -> None:
    async with open_runtime() as rt:
        with pytest.raises(RuntimeError, match="client/t has no nursery: only a running actor has one"):
            rt.client("t").nursery  # noqa: B018


async def test_a_mailbox_must_hold_at_least_one_message() -> None:
    async with open_runtime() as rt:
        with pytest.raises(ValueError, match="mailbox_size must be >= 1 \\(bounded\\), got 0"):
            await rt.spawn(Counter, "counter/c", mailbox_size=0)


async def test_refs_compare_by_actor_id() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Counter, "counter/c")
        assert rt.ref(ActorId("counter", "c")) == ref
        assert len({ref, rt.ref("counter/c")}) == 1
        assert isinstance(ref, ActorRef)


class _SeesWhatItHandles(Actor):
    def __init__(self, seen: list[Envelope | None]) -> None:
        self.seen = seen

    async def on_start(self) -> None:
        self.seen.append(self.ctx.current)


class _Spawner(Actor):
    def __init__(self, seen: list[Envelope | None]) -> None:
        self.seen = seen

    @handler
    async def on_ping(self, msg: Ping) -> None:
        await self.ctx.runtime.spawn(lambda: _SeesWhatItHandles(self.seen), "child/c")


async def test_an_actor_spawned_from_a_handler_does_not_take_that_handlers_message_for_its_own() -> None:
    seen: list[Envelope | None] = []
    async with open_runtime() as rt:
        spawner = await rt.spawn(lambda: _Spawner(seen), "spawner/s")
        await rt.client("t").ask(spawner, Ping())
    assert seen == [None]
