"""Bounded mailboxes: backpressure, tell_nowait, ordering, fairness."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import ActorId, Message
from livecontext.runtime import Actor, MailboxFullError, MailboxStatistics, UnknownActorError, handler, open_runtime
from livecontext.runtime.testing import actor_instance


@frozen
class Item(Message):
    n: int


@frozen
class Count(Message):
    pass


@frozen
class Counted(Message):
    n: int


class Gate(Actor):
    """Handles nothing until its gate opens (a test sets it)."""

    def __init__(self) -> None:
        self.gate = trio.Event()
        self.items: list[int] = []

    @handler
    async def on_item(self, msg: Item) -> None:
        await self.gate.wait()
        self.items.append(msg.n)

    @handler
    async def on_count(self, msg: Count) -> Counted:
        return Counted(len(self.items))


class Quick(Actor):
    def __init__(self) -> None:
        self.items: list[int] = []

    @handler
    async def on_item(self, msg: Item) -> None:
        self.items.append(msg.n)

    @handler
    async def on_count(self, msg: Count) -> Counted:
        return Counted(len(self.items))


async def test_a_sender_waits_while_the_mailbox_is_full_and_resumes_when_it_drains() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Gate, "gate/g", mailbox_size=2)
        actor = actor_instance(ref)
        assert isinstance(actor, Gate)
        client = rt.client("producer")
        sent: list[int] = []

        async def produce() -> None:
            for n in range(6):
                await client.tell(ref, Item(n))
                sent.append(n)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(produce)
            await trio.testing.wait_all_tasks_blocked()
            # one message in the handler, two in the mailbox, the fourth tell waits
            assert sent == [0, 1, 2]
            assert actor.items == []
            actor.gate.set()
        assert sent == [0, 1, 2, 3, 4, 5]
        assert await client.ask(ref, Count()) == Counted(6)
        assert actor.items == [0, 1, 2, 3, 4, 5]


async def test_tell_nowait_raises_mailbox_full_error_instead_of_waiting() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Gate, "gate/g", mailbox_size=2)
        actor = actor_instance(ref)
        assert isinstance(actor, Gate)
        client = rt.client("producer")
        client.tell_nowait(ref, Item(0))
        await trio.testing.wait_all_tasks_blocked()  # the actor takes it and waits at the gate
        client.tell_nowait(ref, Item(1))
        client.tell_nowait(ref, Item(2))
        with pytest.raises(MailboxFullError,
                           match=r"^mailbox of gate/g is full \(2 messages\); use tell \(which waits\) "
                                 r"or give the actor a larger mailbox$") as info:
            client.tell_nowait(ref, Item(3))
        assert info.value.capacity == 2
        assert info.value.actor == ref.id
        actor.gate.set()
        assert await client.ask(ref, Count()) == Counted(3)
        assert actor.items == [0, 1, 2]


async def test_messages_from_one_sender_are_handled_in_the_order_sent() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Quick, "quick/q", mailbox_size=4)
        client = rt.client("producer")
        for n in range(100):
            await client.tell(ref, Item(n))
        assert await client.ask(ref, Count()) == Counted(100)
        actor = actor_instance(ref)
        assert isinstance(actor, Quick)
        assert actor.items == list(range(100))


async def test_an_actor_with_a_long_backlog_lets_other_actors_run() -> None:
    async with open_runtime() as rt:
        busy = await rt.spawn(Quick, "quick/busy", mailbox_size=200)
        other = await rt.spawn(Quick, "quick/other")
        client = rt.client("producer")
        for n in range(200):
            client.tell_nowait(busy, Item(n))
        assert await client.ask(other, Count()) == Counted(0)
        actor = actor_instance(busy)
        assert isinstance(actor, Quick)
        assert len(actor.items) < 200  # the other actor answered while the backlog was handled
        assert await client.ask(busy, Count()) == Counted(200)


async def test_many_producers_into_a_small_mailbox_lose_nothing() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Quick, "quick/q", mailbox_size=1)
        async with trio.open_nursery() as nursery:
            for p in range(5):
                client = rt.client(f"p{p}")

                async def produce(client=client, p=p) -> None:  # type: ignore[no-untyped-def]
                    for n in range(20):
                        await client.tell(ref, Item(p * 100 + n))

                nursery.start_soon(produce)
        assert await rt.client("reader").ask(ref, Count()) == Counted(100)
        actor = actor_instance(ref)
        assert isinstance(actor, Quick)
        for p in range(5):  # each producer's own order is kept
            assert [n for n in actor.items if n // 100 == p] == [p * 100 + n for n in range(20)]


async def test_mailbox_statistics_count_what_waits_in_a_mailbox_and_the_senders_waiting_for_room() -> None:
    async with open_runtime() as rt:
        gate = Gate()
        ref = await rt.spawn(lambda: gate, "gate/g", mailbox_size=2)
        client = rt.client("c")
        await trio.testing.wait_all_tasks_blocked()
        assert rt.mailbox_statistics(ref) == MailboxStatistics(queued=0, capacity=2, senders_waiting=0)
        async with trio.open_nursery() as nursery:
            for n in range(4):  # one handled (stuck at the gate), two queued, one waiting for room
                nursery.start_soon(client.tell, ref, Item(n))
                await trio.testing.wait_all_tasks_blocked()
            assert rt.mailbox_statistics(ref.id) == MailboxStatistics(queued=2, capacity=2, senders_waiting=1)
            gate.gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert rt.mailbox_statistics(ref) == MailboxStatistics(queued=0, capacity=2, senders_waiting=0)
        assert gate.items == [0, 1, 2, 3]


async def test_mailbox_statistics_of_an_unknown_actor_name_it() -> None:
    async with open_runtime() as rt:
        with pytest.raises(UnknownActorError, match="nobody/here"):
            rt.mailbox_statistics(ActorId("nobody", "here"))
