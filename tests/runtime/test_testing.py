"""``livecontext.runtime.testing.actor_instance``: the actor object behind a ref, for tests that
must read what an actor noted (the kernel's own tests) instead of asking it."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import Message
from livecontext.runtime import Actor, RemoteActorError, handler, open_runtime
from livecontext.runtime.testing import SteppingScheduler, actor_instance, run_stepping


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


async def test_run_stepping_steps_runtimes_opened_one_after_another_on_its_scheduler_and_a_seed_repeats() -> None:
    async def body(scheduler: SteppingScheduler) -> list[str]:
        notes = []
        for round_ in ("first", "second"):  # the second runtime: the same scheduler, the trace goes on
            async with open_runtime(scheduler=scheduler) as rt:
                refs = [await rt.spawn(Notes, f"notes/{n}") for n in "abc"]
                client = rt.client("t")
                async with trio.open_nursery() as nursery:
                    for ref in refs:
                        nursery.start_soon(client.ask, ref, Note(round_))
                notes += [f"{ref.id.name}:{actor_instance(ref).notes[0]}" for ref in refs]
        return notes

    run = await run_stepping(body, 7)
    again = await run_stepping(body, 7)

    assert run.ok and run.result == ["a:first", "b:first", "c:first", "a:second", "b:second", "c:second"]
    assert len(run.trace) == 6 and [d.step for d in run.trace] == [1, 2, 3, 4, 5, 6]
    assert again.trace == run.trace
