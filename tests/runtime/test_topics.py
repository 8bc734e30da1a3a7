"""Topics: publish fan-out, subscribe/unsubscribe, subscriptions outside actors."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import ActorId, Envelope, Message, Topic
from livecontext.runtime import Actor, AuditEvent, AuditRecord, handler, open_runtime
from livecontext.runtime.testing import actor_instance

NEWS = Topic("news")


@frozen
class Headline(Message):
    text: str


@frozen
class Weather(Message):
    degrees: int


@frozen
class Seen(Message):
    pass


@frozen
class SeenList(Message):
    texts: tuple[str, ...]


@frozen
class Unsubscribe(Message):
    pass


class Reader(Actor):
    def __init__(self) -> None:
        self.envelopes: list[Envelope] = []

    async def on_start(self) -> None:
        self.ctx.subscribe(NEWS)

    @handler
    async def on_headline(self, msg: Headline) -> None:
        assert self.ctx.current is not None
        self.envelopes.append(self.ctx.current)

    @handler
    async def on_seen(self, msg: Seen) -> SeenList:
        return SeenList(tuple(e.payload.text for e in self.envelopes))  # type: ignore[attr-defined]

    @handler
    async def on_unsubscribe(self, msg: Unsubscribe) -> None:
        self.ctx.unsubscribe("news")


class Editor(Actor):
    @handler
    async def on_headline(self, msg: Headline) -> None:
        await self.ctx.publish(NEWS, msg)


async def test_publish_delivers_one_shared_envelope_to_every_subscriber() -> None:
    async with open_runtime() as rt:
        readers = [await rt.spawn(Reader, f"reader/r{i}") for i in range(5)]
        client = rt.client("press")
        await client.publish(NEWS, Headline("hello"))
        await client.publish("news", Headline("again"))
        for ref in readers:
            assert await client.ask(ref, Seen()) == SeenList(("hello", "again"))
        envelopes = [actor_instance(ref).envelopes[0] for ref in readers]
        assert len({e.message_id for e in envelopes}) == 1
        assert envelopes[0].recipient == NEWS
        assert envelopes[0].sender == ActorId("client", "press")


async def test_an_actor_publishing_from_a_handler_is_the_stamped_sender() -> None:
    async with open_runtime() as rt:
        reader = await rt.spawn(Reader, "reader/r")
        editor = await rt.spawn(Editor, "editor/e")
        client = rt.client("t")
        await client.ask(editor, Headline("scoop"))
        assert await client.ask(reader, Seen()) == SeenList(("scoop",))
        envelope = actor_instance(reader).envelopes[0]
        assert envelope.sender == editor.id


async def test_an_unsubscribed_actor_no_longer_receives_the_topic() -> None:
    async with open_runtime() as rt:
        stays = await rt.spawn(Reader, "reader/stays")
        leaves = await rt.spawn(Reader, "reader/leaves")
        client = rt.client("press")
        await client.publish(NEWS, Headline("one"))
        await client.ask(leaves, Unsubscribe())
        await client.publish(NEWS, Headline("two"))
        assert await client.ask(stays, Seen()) == SeenList(("one", "two"))
        assert await client.ask(leaves, Seen()) == SeenList(("one",))


async def test_a_stopped_actor_is_unsubscribed() -> None:
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        ref = await rt.spawn(Reader, "reader/r")
        await rt.stop(ref)
        await rt.client("press").publish(NEWS, Headline("to nobody"))
    assert records == []  # not even a drop: nobody follows the topic any more


async def test_open_subscription_receives_what_is_published_outside_any_actor() -> None:
    async with open_runtime() as rt:
        client = rt.client("press")
        async with rt.open_subscription("news") as inbox:
            await client.publish(NEWS, Headline("first"))
            await client.publish(NEWS, Weather(21))
            first, second = await inbox.receive(), await inbox.receive()
        assert first.payload == Headline("first")
        assert second.payload == Weather(21)
        assert first.recipient == NEWS
        assert not rt.has_subscribers(NEWS)  # the subscription ended with the block


async def test_a_full_subscription_buffer_makes_the_publisher_wait() -> None:
    async with open_runtime() as rt:
        client = rt.client("press")
        async with rt.open_subscription(NEWS, buffer=1) as inbox:
            published: list[str] = []

            async def publish_all() -> None:
                for text in ("a", "b", "c"):
                    await client.publish(NEWS, Headline(text))
                    published.append(text)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(publish_all)
                await trio.testing.wait_all_tasks_blocked()
                assert published == ["a"]
                received = [(await inbox.receive()).payload for _ in range(3)]
        assert received == [Headline("a"), Headline("b"), Headline("c")]


async def test_a_subscriber_without_a_handler_for_the_message_gets_an_audited_drop() -> None:
    records: list[AuditRecord] = []
    async with open_runtime() as rt:
        rt.add_audit_hook(records.append)
        reader = await rt.spawn(Reader, "reader/r")
        client = rt.client("press")
        async with rt.open_subscription(NEWS) as inbox:
            await client.publish(NEWS, Weather(30))  # Reader handles Headline, not Weather
            assert (await inbox.receive()).payload == Weather(30)  # other subscribers still get it
        assert await client.ask(reader, Seen()) == SeenList(())
    drops = [r for r in records if r.event is AuditEvent.DROPPED]
    assert len(drops) == 1
    assert drops[0].envelope.payload == Weather(30)
    assert drops[0].reason == "subscriber reader/r has no handler for Weather"
    assert rt.statistics().dropped == 1


async def test_publishing_to_a_topic_nobody_follows_does_nothing() -> None:
    async with open_runtime() as rt:
        await rt.client("press").publish(Topic("empty"), Headline("void"))
        assert rt.statistics().delivered == 0


async def test_only_actors_subscribe_and_clients_use_open_subscription() -> None:
    async with open_runtime() as rt:
        with pytest.raises(RuntimeError, match=r"client/t is not an actor; use Runtime.open_subscription\(\) outside actors"):
            rt.client("t").subscribe(NEWS)
