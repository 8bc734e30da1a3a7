"""``Runtime.is_idle``: true only when an actor has nothing queued, held or running."""

from __future__ import annotations

import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import Message
from livecontext.runtime import Actor, SteppingScheduler, handler, open_runtime


@frozen
class Wait(Message):
    """Handled (in the actor's own task, or inline) once the gate opens."""


@frozen
class WaitInline(Message):
    pass


class Gated(Actor):
    def __init__(self, gate: trio.Event) -> None:
        self.gate = gate

    @handler
    async def on_wait(self, msg: Wait) -> None:
        await self.gate.wait()

    @handler(inline=True)
    def on_wait_inline(self, msg: WaitInline) -> None:
        self.idle_while_inline = self.ctx.runtime.is_idle(self.ctx.self_id)


async def test_an_actor_is_idle_only_with_an_empty_mailbox_and_no_handler_running() -> None:
    gate = trio.Event()
    async with open_runtime() as rt:
        ref = await rt.spawn(lambda: Gated(gate), "gated/g")
        client = rt.client("c")
        await trio.testing.wait_all_tasks_blocked()
        assert rt.is_idle(ref)
        assert rt.is_idle(ref.id)
        client.tell_nowait(ref, Wait())
        assert not rt.is_idle(ref)  # queued, not yet taken
        await trio.testing.wait_all_tasks_blocked()
        assert not rt.is_idle(ref)  # its handler runs
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert rt.is_idle(ref)


async def test_an_actor_whose_inline_handler_runs_in_an_askers_task_is_not_idle() -> None:
    actors: list[Gated] = []
    async with open_runtime() as rt:
        ref = await rt.spawn(lambda: actors.append(Gated(trio.Event())) or actors[-1], "gated/g")
        await trio.testing.wait_all_tasks_blocked()
        await rt.client("c").ask(ref, WaitInline())
        assert actors[0].idle_while_inline is False
        assert rt.is_idle(ref)


async def test_a_stopped_actor_is_not_idle() -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(lambda: Gated(trio.Event()), "gated/g")
        await rt.stop(ref)
        assert not rt.is_idle(ref)


async def test_under_a_stepping_scheduler_an_actor_with_a_held_envelope_is_not_idle() -> None:
    scheduler = SteppingScheduler(seed=1)
    gate = trio.Event()
    gate.set()
    async with open_runtime(scheduler=scheduler) as rt:
        ref = await rt.spawn(lambda: Gated(gate), "gated/g")
        await scheduler.settle()
        assert rt.is_idle(ref)
        await rt.client("c").tell(ref, Wait())
        assert scheduler.held == 1
        assert not rt.is_idle(ref)
        await scheduler.run_until_idle()
        assert rt.is_idle(ref)
