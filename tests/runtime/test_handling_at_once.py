"""What a handler run at once (an inline handler with no ``await``, in its sender's task) sees
and passes on: its own envelope as ``ctx.current`` and as the cause of what it sends, also to a
task it starts in any nursery; and its sender finds its own ``ctx.current`` unchanged afterwards."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol import ActorId, Envelope, Message
from livecontext.runtime import Actor, handler, open_runtime


@frozen
class Note(Message):
    text: str


@frozen
class Kick(Message):
    """Handled at once: tells ``Note`` to ``to`` and starts a task that tells another later."""

    to: ActorId


@frozen
class Relay(Message):
    """Handled in the actor's own task: asks ``to`` a ``Kick``, then tells it a ``Note``."""

    to: ActorId


class Sink(Actor):
    def __init__(self) -> None:
        self.received: list[Envelope] = []

    @handler
    async def on_note(self, msg: Note) -> None:
        assert self.ctx.current is not None
        self.received.append(self.ctx.current)


class Kicker(Actor):
    def __init__(self, kept_nursery: bool = False) -> None:
        self.kicks: list[Envelope] = []
        self.seen_in_task: list[Envelope | None] = []
        self.kept_nursery = kept_nursery
        self.nursery: trio.Nursery | None = None

    async def on_start(self) -> None:
        if self.kept_nursery:  # started tasks go there later, without reading ctx.nursery
            self.nursery = self.ctx.nursery

    @handler(inline=True)
    async def on_kick(self, msg: Kick) -> None:
        current = self.ctx.current
        assert current is not None
        self.kicks.append(current)
        self.ctx.tell_nowait(msg.to, Note("from the handler"))

        async def later() -> None:
            await trio.sleep(0)
            self.seen_in_task.append(self.ctx.current)
            await self.ctx.tell(msg.to, Note("from its task"))

        (self.nursery or self.ctx.nursery).start_soon(later)


class Relayer(Actor):
    def __init__(self) -> None:
        self.handled: list[Envelope] = []
        self.after_ask: list[Envelope | None] = []

    @handler
    async def on_relay(self, msg: Relay) -> None:
        assert self.ctx.current is not None
        self.handled.append(self.ctx.current)
        await self.ctx.ask(msg.to, Kick(ActorId("sink", "s")))
        self.after_ask.append(self.ctx.current)
        await self.ctx.tell(ActorId("sink", "s"), Note("from the relay"))


async def _run(kept_nursery: bool = False) -> tuple[Sink, Kicker, Relayer]:
    sink, kicker, relayer = Sink(), Kicker(kept_nursery), Relayer()
    async with open_runtime() as rt:
        await rt.spawn(lambda: sink, "sink/s")
        kick = await rt.spawn(lambda: kicker, "kick/k")
        relay = await rt.spawn(lambda: relayer, "relay/r")
        await trio.testing.wait_all_tasks_blocked()  # all idle: the Kick is handled at once
        await rt.client("t").ask(relay, Relay(kick.id))
        with trio.fail_after(5):
            while len(sink.received) < 3:
                await trio.sleep(0.001)
    return sink, kicker, relayer


async def test_what_a_handler_run_at_once_sends_names_its_message_as_the_cause() -> None:
    sink, kicker, _ = await _run()
    (kick,) = kicker.kicks
    by_text = {env.payload.text: env for env in sink.received if isinstance(env.payload, Note)}
    assert by_text["from the handler"].causation_id == kick.message_id


@pytest.mark.parametrize("kept_nursery", [False, True], ids=["ctx.nursery", "a nursery kept from on_start"])
async def test_a_task_started_by_a_handler_run_at_once_inherits_what_it_handled(kept_nursery: bool) -> None:
    sink, kicker, _ = await _run(kept_nursery)
    (kick,) = kicker.kicks
    assert kicker.seen_in_task == [kick]
    by_text = {env.payload.text: env for env in sink.received if isinstance(env.payload, Note)}
    assert by_text["from its task"].causation_id == kick.message_id


async def test_the_asker_still_handles_its_own_message_after_a_handler_ran_at_once_in_its_task() -> None:
    sink, kicker, relayer = await _run()
    (relay,) = relayer.handled
    assert kicker.kicks[0].causation_id == relay.message_id  # the ask was caused by the Relay
    assert relayer.after_ask == [relay]
    by_text = {env.payload.text: env for env in sink.received if isinstance(env.payload, Note)}
    assert by_text["from the relay"].causation_id == relay.message_id
