"""``livecontext.runtime.testing.actor_instance``: the actor object behind a ref, for tests that
must read what an actor noted (the kernel's own tests) instead of asking it."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import Message
from livecontext.runtime import Actor, RemoteActorError, handler, open_runtime
from livecontext.runtime.testing import actor_instance


@frozen
class Note(Message):
    text: str


@frozen
class Fail(Message):
    pass


class Notes(Actor):
    def __init__(self) -> None:
        self.notes: list[str] = []

    @handler
    async def on_note(self, msg: Note) -> None:
        self.notes.append(msg.text)

    @handler
    async def on_fail(self, msg: Fail) -> None:
        raise RuntimeError("asked to fail")


async def test_actor_instance_is_the_object_that_handled_the_messages_and_a_new_one_after_a_restart(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Notes, "notes/n")
        client = rt.client("t")
        await client.ask(ref, Note("one"))
        first = actor_instance(ref)
        assert first.notes == ["one"]
        assert actor_instance(rt.ref("notes/n")) is first  # by id as by the spawn's ref
        with pytest.raises(RemoteActorError, match="asked to fail"):
            await client.ask(ref, Fail())
        await client.ask(ref, Note("two"))
        again = actor_instance(ref)
        assert again is not first and again.notes == ["two"]
        await rt.stop(ref)
    assert actor_instance(ref) is again  # a stopped actor keeps its last object
