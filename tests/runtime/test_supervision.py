"""Supervision: restart with backoff, intensity limit, escalation to the parent or the runtime."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.kernel import ActorEscalated, ActorId, ActorRestarted, Envelope, Message
from livecontext.runtime import (
    SUPERVISION_TOPIC,
    SUPERVISOR_ID,
    Actor,
    ActorStoppedError,
    RemoteActorError,
    RestartPolicy,
    handler,
    open_runtime,
)
from livecontext.runtime.testing import actor_instance


@frozen
class Incr(Message):
    pass


@frozen
class Crash(Message):
    why: str


@frozen
class CrashLater(Message):
    """Start a background task that fails."""


@frozen
class Value(Message):
    pass


@frozen
class Current(Message):
    n: int
    generation: int


@frozen
class Escalations(Message):
    pass


@frozen
class EscalationList(Message):
    actors: tuple[str, ...]


class Fragile(Actor):
    generation = 0

    def __init__(self) -> None:
        self.n = 0

    async def on_start(self) -> None:
        Fragile.generation += 1
        self.generation = Fragile.generation

    @handler
    async def on_incr(self, msg: Incr) -> None:
        self.n += 1

    @handler
    async def on_crash(self, msg: Crash) -> None:
        raise RuntimeError(msg.why)

    @handler
    async def on_crash_later(self, msg: CrashLater) -> None:
        async def fail() -> None:
            await trio.sleep(0.5)
            raise KeyError("lost in the background")

        self.ctx.nursery.start_soon(fail)

    @handler
    async def on_value(self, msg: Value) -> Current:
        return Current(self.n, self.generation)


class Parent(Actor):
    def __init__(self) -> None:
        self.escalations: list[tuple[ActorEscalated, Envelope]] = []

    @handler
    async def on_escalated(self, msg: ActorEscalated) -> None:
        assert self.ctx.current is not None
        self.escalations.append((msg, self.ctx.current))

    @handler
    async def on_escalations(self, msg: Escalations) -> EscalationList:
        return EscalationList(tuple(str(m.actor) for m, _ in self.escalations))


class Healthy(Actor):
    @handler
    async def on_value(self, msg: Value) -> Current:
        return Current(7, 0)


class FailsToStart(Actor):
    async def on_start(self) -> None:
        raise OSError("config file missing")


class FailsToRestart(Actor):
    starts = 0

    async def on_start(self) -> None:
        FailsToRestart.starts += 1
        if FailsToRestart.starts > 1:
            raise OSError("cannot reload state")

    @handler
    async def on_crash(self, msg: Crash) -> None:
        raise RuntimeError(msg.why)


async def _crash(client, ref, why: str = "boom") -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RemoteActorError, match=f"RuntimeError: {why}"):
        await client.ask(ref, Crash(why))


async def test_a_crashing_actor_is_restarted_with_fresh_state_from_its_factory(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Fragile, "fragile/f")
        client = rt.client("t")
        await client.tell(ref, Incr())
        await client.tell(ref, Incr())
        first = await client.ask(ref, Value())
        assert first.n == 2
        await _crash(client, ref)
        after = await client.ask(ref, Value())
        assert after == Current(0, first.generation + 1)
        assert rt.is_running(ref)
        assert rt.statistics().restarts == 1


async def test_each_restart_is_published_on_the_supervision_topic_with_a_doubling_backoff(
    autojump_clock: trio.testing.MockClock,
) -> None:
    policy = RestartPolicy(max_restarts=3, within_s=60, backoff_initial_s=0.5, backoff_max_s=1.5)
    async with open_runtime() as rt:
        ref = await rt.spawn(Fragile, "fragile/f", restart=policy)
        client = rt.client("t")
        async with rt.open_subscription(SUPERVISION_TOPIC) as supervision:
            times = []
            for i in range(3):
                await _crash(client, ref, f"crash {i}")
                before = trio.current_time()
                await client.ask(ref, Value())  # answered by the restarted actor
                times.append(trio.current_time() - before)
            published = [supervision.receive_nowait() for _ in range(3)]
    assert [e.payload for e in published] == [
        ActorRestarted(ActorId("fragile", "f"), "RuntimeError", "crash 0", 1, 0.5),
        ActorRestarted(ActorId("fragile", "f"), "RuntimeError", "crash 1", 2, 1.0),
        ActorRestarted(ActorId("fragile", "f"), "RuntimeError", "crash 2", 3, 1.5),
    ]
    assert all(e.sender == SUPERVISOR_ID for e in published)
    assert times == pytest.approx([0.5, 1.0, 1.5])  # the restart waits out its backoff


async def test_an_actor_failing_too_often_is_stopped_and_escalated_while_the_rest_keeps_serving(
    autojump_clock: trio.testing.MockClock,
) -> None:
    policy = RestartPolicy(max_restarts=2, within_s=10, backoff_initial_s=0.1)
    async with open_runtime() as rt:
        healthy = await rt.spawn(Healthy, "healthy/h")
        ref = await rt.spawn(Fragile, "fragile/f", restart=policy)
        client = rt.client("t")
        async with rt.open_subscription(SUPERVISION_TOPIC) as supervision:
            for i in range(3):
                await _crash(client, ref, f"crash {i}")
            await trio.testing.wait_all_tasks_blocked()
            payloads = [supervision.receive_nowait().payload for _ in range(3)]
        assert [type(p) for p in payloads] == [ActorRestarted, ActorRestarted, ActorEscalated]
        escalated = ActorEscalated(ActorId("fragile", "f"), "RuntimeError", "crash 2", 3, 10.0)
        assert payloads[2] == escalated
        assert rt.failures == [escalated]
        assert not rt.is_running(ref)
        with pytest.raises(ActorStoppedError, match="actor fragile/f is stopped"):
            await client.ask(ref, Value())
        assert await client.ask(healthy, Value()) == Current(7, 0)
        stats = rt.statistics()
        assert (stats.restarts, stats.escalations) == (2, 1)


async def test_failures_spread_wider_than_the_window_do_not_escalate(autojump_clock: trio.testing.MockClock) -> None:
    policy = RestartPolicy(max_restarts=1, within_s=5, backoff_initial_s=0)
    async with open_runtime() as rt:
        ref = await rt.spawn(Fragile, "fragile/f", restart=policy)
        client = rt.client("t")
        for i in range(4):
            await _crash(client, ref, f"crash {i}")
            await trio.sleep(6)
        assert rt.is_running(ref)
        assert rt.failures == []
        await _crash(client, ref, "soon after")
        await _crash(client, ref, "too soon")
        await trio.testing.wait_all_tasks_blocked()
        assert not rt.is_running(ref)


async def test_an_escalation_goes_to_a_parent_that_handles_it(autojump_clock: trio.testing.MockClock) -> None:
    async with open_runtime() as rt:
        parent = await rt.spawn(Parent, "parent/p")
        child = await rt.spawn(Fragile, "fragile/child", parent=parent.id, restart=RestartPolicy(max_restarts=0))
        client = rt.client("t")
        async with rt.open_subscription(SUPERVISION_TOPIC) as supervision:
            await _crash(client, child, "fatal")  # the asker hears before the supervisor acts
            await trio.testing.wait_all_tasks_blocked()
            assert await client.ask(parent, Escalations()) == EscalationList(("fragile/child",))
            with pytest.raises(trio.WouldBlock):
                supervision.receive_nowait()  # the parent took it: nothing published
        parent_actor = actor_instance(parent)
        assert isinstance(parent_actor, Parent)
        message, envelope = parent_actor.escalations[0]
        assert message == ActorEscalated(child.id, "RuntimeError", "fatal", 1, 5.0)
        assert envelope.sender == SUPERVISOR_ID
        assert rt.failures == []


async def test_an_escalation_whose_parent_does_not_handle_it_goes_to_the_runtime(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime() as rt:
        parent = await rt.spawn(Healthy, "healthy/p")
        child = await rt.spawn(Fragile, "fragile/child", parent=parent.id, restart=None)
        await _crash(rt.client("t"), child, "fatal")
        await trio.testing.wait_all_tasks_blocked()
        assert [f.actor for f in rt.failures] == [child.id]
        assert rt.failures[0].within_s == 0.0


async def test_a_failure_in_a_background_task_restarts_the_actor(autojump_clock: trio.testing.MockClock) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Fragile, "fragile/f")
        client = rt.client("t")
        async with rt.open_subscription(SUPERVISION_TOPIC) as supervision:
            await client.tell(ref, Incr())
            before = await client.ask(ref, Value())
            await client.ask(ref, CrashLater())
            restarted = (await supervision.receive()).payload
        assert restarted == ActorRestarted(ref.id, "KeyError", "'lost in the background'", 1, 0.01)
        assert await client.ask(ref, Value()) == Current(0, before.generation + 1)


async def test_on_start_failing_at_the_first_spawn_raises_to_the_spawner() -> None:
    async with open_runtime() as rt:
        with pytest.raises(OSError, match="^config file missing$"):
            await rt.spawn(FailsToStart, "starter/s")
        assert not rt.is_running(ActorId("starter", "s"))
        assert rt.failures == []
        ref = await rt.spawn(Healthy, "starter/s")  # the id is free again
        assert await rt.client("t").ask(ref, Value()) == Current(7, 0)


async def test_on_start_failing_at_a_restart_counts_as_another_failure(autojump_clock: trio.testing.MockClock) -> None:
    FailsToRestart.starts = 0
    async with open_runtime() as rt:
        ref = await rt.spawn(FailsToRestart, "restarter/r", restart=RestartPolicy(max_restarts=3, within_s=60))
        await _crash(rt.client("t"), ref, "first")
        await trio.sleep(10)  # the restarts' backoffs
        assert not rt.is_running(ref)
        assert rt.failures == [ActorEscalated(ref.id, "OSError", "cannot reload state", 4, 60.0)]
        assert FailsToRestart.starts == 4


async def test_messages_queued_during_a_restart_are_handled_by_the_new_instance(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime() as rt:
        ref = await rt.spawn(Fragile, "fragile/f", restart=RestartPolicy(backoff_initial_s=1))
        client = rt.client("t")
        await client.tell(ref, Crash("now"))
        await client.tell(ref, Incr())
        await client.tell(ref, Incr())
        assert (await client.ask(ref, Value())).n == 2


@pytest.mark.parametrize(
    "kwargs", [{"max_restarts": -1}, {"within_s": 0}, {"backoff_initial_s": -0.1}],
)
def test_an_impossible_restart_policy_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=r"invalid RestartPolicy .*: max_restarts >= 0, within_s > 0, backoff >= 0"):
        RestartPolicy(**kwargs)  # type: ignore[arg-type]


class FailsToStop(Actor):
    starts = 0

    async def on_start(self) -> None:
        FailsToStop.starts += 1

    async def on_stop(self) -> None:
        raise RuntimeError("cannot flush the log")

    @handler
    async def on_value(self, msg: Value) -> Current:
        return Current(0, FailsToStop.starts)


async def test_a_failure_in_on_stop_is_escalated_without_a_restart(autojump_clock: trio.testing.MockClock) -> None:
    FailsToStop.starts = 0
    async with open_runtime() as rt:
        ref = await rt.spawn(FailsToStop, "stopper/s")
        await rt.client("t").tell(ref, Value())
        await rt.stop(ref)
        assert not rt.is_running(ref)
        assert FailsToStop.starts == 1
        assert rt.failures == [ActorEscalated(ref.id, "RuntimeError", "cannot flush the log", 0, 5.0)]
