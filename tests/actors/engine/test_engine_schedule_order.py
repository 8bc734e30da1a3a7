"""The engine's history does not depend on the order in which trio runs ready tasks.

Trio runs each batch of ready tasks in an order it randomises, so that nobody relies on it.
Each scenario here runs once per seed with trio's scheduler made seeded and fully shuffled
(what trio does under Hypothesis: the batch sorted, then shuffled by trio's own ``_r``), and
once per seed of the project's stepping scheduler; the thread's records (times left out) and
the engine's replies must be the same for every seed.

What comes from outside the engine in a scenario (an input, a ``Pause``, a ``Cancel``) is sent
at a point fixed by the scenario itself (while the model call or the tool waits for it), so
the only freedom left is the schedulers'. The scenarios that send a ``Cancel`` as the engine
records (as the model's reply comes, as an app applies an effect) run under trio's scheduler only: under the stepping scheduler
that ``Cancel`` and the engine's writes are two senders' envelopes, which may be delivered in
either order (a real race there, with other outcomes).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest
import trio
import trio.testing
from attrs import define, field, frozen

from livecontext.actors.agent import _agent as agent_module
from livecontext.actors.apps import App, ToolOutcome, tool
from livecontext.protocol.agent import Cancel, Idle, Pause, ProvideInput, RunUntilIdle
from livecontext.protocol.history import ModelReply, ModelRequest
from livecontext.protocol.kernel import Message
from livecontext.protocol.wire import make_converter
from livecontext.runtime import Context, Runtime, open_runtime
from livecontext.runtime.models import ModelClient, TextCallback
from livecontext.runtime.persistence import open_store
from livecontext.runtime.testing import open_stepping_runtime
from tests.support.agent_harness import Probe, ProbeApp, counter, scripted
from tests.support.context_world import step_until_settled

TRIO_SEEDS = range(50)
"""Seeds of trio's own scheduler, per scenario."""
STEPPING_SEEDS = range(24)
"""Seeds of the stepping scheduler, per scenario."""
SLOW = 30.0
CONVERTER = make_converter()


# -- trio's scheduler, seeded --------------------------------------------------------------------


@contextlib.contextmanager
def seeded_trio_scheduling(seed: int) -> Iterator[None]:
    """Make trio's choice of which ready task runs next come from ``seed``: every batch of
    ready tasks is shuffled (rather than only reversed half the time, trio's default)."""
    run_module: Any = trio._core._run  # (private: no public way to seed trio's scheduler)
    state = run_module._r.getstate()
    allowed = run_module._ALLOW_DETERMINISTIC_SCHEDULING
    run_module._r.seed(seed)
    run_module._ALLOW_DETERMINISTIC_SCHEDULING = True
    try:
        yield
    finally:
        run_module._ALLOW_DETERMINISTIC_SCHEDULING = allowed
        run_module._r.setstate(state)


class ScheduleRecorder(trio.abc.Instrument):
    """Which tasks trio ran, in order (by name): a fingerprint of one run's schedule."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.names.append(task.name)


# -- what a scenario has ------------------------------------------------------------------------


class GatedModel(ModelClient):
    """A scripted model whose calls run ``before`` (given the call's number, from 1) first."""

    def __init__(self, turns: Sequence[Mapping[str, Any]]) -> None:
        self.inner = scripted(turns)
        self.name = self.inner.name
        self.calls = 0
        self.before: Callable[[int], Awaitable[None]] | None = None
        self.after: Callable[[int], None] | None = None
        """Run once the reply is ready, just before it is returned (no schedule point between)."""

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.calls += 1
        if self.before is not None:
            await self.before(self.calls)
        reply = await self.inner.complete(request, on_text)
        if self.after is not None:
            self.after(self.calls)
        return reply

    async def aclose(self) -> None:
        await self.inner.aclose()


@frozen
class BellRung(Message):
    """The bell app's effect."""

    note: str = "ding"


@define
class Bell:
    """What the bell app does when its effect is applied (shared by every instance the host makes)."""

    on_ring: Callable[[], None] | None = None


class BellApp(App):
    """A test app whose one tool has an effect; applying it calls ``bell.on_ring``.

    The host applies an effect inline, in the engine's task, right after the result is
    recorded: what ``on_ring`` sends reaches the engine as its step ends."""

    name = "bell"
    effects = (BellRung,)

    def __init__(self, bell: Bell | None = None) -> None:
        self.bell = bell if bell is not None else Bell()

    def fresh(self) -> BellApp:
        return type(self)(self.bell)

    def view(self) -> str:
        return "BELL"

    @tool(idempotent=True)
    def ring(self) -> ToolOutcome:
        """Ring the bell."""
        return ToolOutcome.ok("rang", effect=BellRung())

    def apply(self, effect: Message) -> None:
        if isinstance(effect, BellRung):
            if self.bell.on_ring is not None:
                self.bell.on_ring()
            return
        super().apply(effect)


@define
class World:
    """One running agent for a scenario, and a client to drive it."""

    rt: Runtime
    agent: agent_module.AgentActors
    client: Context
    model: GatedModel
    probe: Probe
    bell: Bell
    replies: list[str] = field(factory=list)
    """What the engine answered, in order (the scenario's own record of it)."""

    async def run_until_idle(self) -> None:
        idle = await self.client.ask(self.agent.engine, RunUntilIdle(), timeout=None)
        assert isinstance(idle, Idle)
        self.replies.append(f"{idle.reason.value} {idle.state.value} {idle.steps} {idle.error}")

    async def tell_engine(self, message: Message) -> None:
        await self.client.ask(self.agent.engine, message, timeout=None)


Scenario = Callable[[World], Awaitable[None]]


async def several_tool_calls(w: World) -> None:
    await w.run_until_idle()


async def input_during_a_model_call(w: World) -> None:
    async def first_call_takes_more_input(call: int) -> None:
        if call == 1:  # (asked, not told: the source has it before the model answers)
            await w.client.ask(w.agent.input, ProvideInput("and one more thing"), timeout=None)
    w.model.before = first_call_takes_more_input
    await w.run_until_idle()


async def pause_during_a_model_call(w: World) -> None:
    async def pause_at_the_second_call(call: int) -> None:
        if call == 2:
            await w.tell_engine(Pause())
    w.model.before = pause_at_the_second_call
    await w.run_until_idle()
    await w.run_until_idle()  # (not after a Resume: the engine would run on its own meanwhile)


async def cancel_during_a_tool(w: World) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(w.run_until_idle)
        await w.probe.started.wait()
        await w.tell_engine(Cancel())
    await w.run_until_idle()


async def cancel_while_a_reply_is_recorded(w: World) -> None:
    def cancel_as_the_reply_comes(call: int) -> None:
        if call == 1:  # the reply is recorded (shielded), the Cancel lands after it
            w.client.tell_nowait(w.agent.engine, Cancel())
    w.model.after = cancel_as_the_reply_comes
    await w.run_until_idle()
    await w.run_until_idle()


async def cancel_as_an_effect_is_applied(w: World) -> None:
    def cancel_once() -> None:  # into the mailbox (Cancel's handler waits), as the step ends
        w.bell.on_ring = None
        w.client.tell_nowait(w.agent.engine, Cancel())
    w.bell.on_ring = cancel_once
    await w.run_until_idle()
    await w.run_until_idle()


def tool_calls(*calls: tuple[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": args} for name, args in calls]}


SCENARIOS: dict[str, tuple[Scenario, list[dict[str, Any]]]] = {
    "several tool calls": (several_tool_calls, [
        tool_calls(("record", {"label": "a"}), ("record", {"label": "b"}), ("explode", {"why": "no"})),
        tool_calls(("record", {"label": "c"})),
        {"text": "done"},
    ]),
    "input during a model call": (input_during_a_model_call, [
        tool_calls(("record", {"label": "a"})), {"text": "first"}, {"text": "second"},
    ]),
    "pause during a model call": (pause_during_a_model_call, [
        tool_calls(("record", {"label": "a"})), tool_calls(("record", {"label": "b"})), {"text": "done"},
    ]),
    "cancel during a tool": (cancel_during_a_tool, [
        tool_calls(("slow_once", {"seconds": SLOW}), ("record", {"label": "a"})), {"text": "done"},
    ]),
    "cancel as an effect is applied": (cancel_as_an_effect_is_applied, [
        tool_calls(("ring", {}), ("slow_once", {"seconds": 0}), ("record", {"label": "a"})), {"text": "done"},
    ]),
    "cancel while a reply is recorded": (cancel_while_a_reply_is_recorded, [
        tool_calls(("slow_once", {"seconds": 0}), ("record", {"label": "a"})), {"text": "done"},
    ]),
}
UNWATCHED = {"cancel as an effect is applied"}
"""Nobody subscribes to the engine's events: it publishes none (no schedule point after a write)."""
NOT_STEPPED = {
    "cancel as an effect is applied": "its Cancel races the engine's writes there (see the module docstring)",
    "cancel while a reply is recorded": "its Cancel races the engine's writes there (see the module docstring)",
}


# -- running a scenario -------------------------------------------------------------------------


def _without_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if not k.endswith(("_at", "_ns"))}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


async def run_scenario(name: str, stepping_seed: int | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Run scenario ``name`` on a fresh agent (under a stepping scheduler of ``stepping_seed``,
    if given); return the thread's records (sender, kind, payload without times) and the
    engine's replies."""
    scenario, turns = SCENARIOS[name]
    model = GatedModel(turns)
    probe = Probe()
    bell = Bell()
    settings = agent_module.AgentSettings(thread_id="t", system_prompt="You are a test agent.")
    async with await open_store("memory:") as store:
        log = await store.open_thread("t", create=True, owner="tests")
        async with log:
            if stepping_seed is None:
                runtime: Any = open_runtime()
            else:
                runtime = open_stepping_runtime(stepping_seed)
            async with runtime as opened:
                rt = opened if stepping_seed is None else opened[0]
                worlds: list[World] = []

                async def body() -> None:
                    agent = await agent_module.spawn_agent(
                        rt, log, model, settings, converter=CONVERTER, counter=counter(),
                        inputs=["go"], apps=[ProbeApp(probe), BellApp(bell)])
                    world = World(rt, agent, rt.client("test"), model, probe, bell)
                    worlds.append(world)
                    if name in UNWATCHED:
                        await scenario(world)
                        return
                    # someone listens: the engine publishes its events, as when a user watches
                    async with rt.open_subscription(agent.events, buffer=4096) as events:
                        async with trio.open_nursery() as nursery:
                            async def drain() -> None:
                                async for _ in events:
                                    pass
                            nursery.start_soon(drain)
                            await scenario(world)
                            nursery.cancel_scope.cancel()

                with trio.fail_after(10 * SLOW):  # (the clock's time: a run that hangs fails)
                    if stepping_seed is None:
                        await body()
                    else:
                        await step_until_settled(opened[1], body)
                records = await log.read(1)
    history = tuple(f"{r.sender} {r.kind} {json.dumps(_without_times(json.loads(r.payload)), sort_keys=True)}"
                    for r in records)
    return history, tuple(worlds[0].replies)


Outcome = tuple[tuple[str, ...], tuple[str, ...]]


def _outcomes_by_seed(name: str, seeds: range, *, stepping: bool) -> tuple[dict[int, Outcome], int]:
    """Each seed's outcome, and how many different schedules trio ran them in."""
    got = {}
    schedules = set()
    for seed in seeds:
        clock = trio.testing.MockClock(autojump_threshold=0)
        recorder = ScheduleRecorder()
        with seeded_trio_scheduling(seed):
            got[seed] = trio.run(run_scenario, name, seed if stepping else None, clock=clock,
                                 instruments=[recorder])
        schedules.add(hash(tuple(recorder.names)))
    return got, len(schedules)


def _assert_all_equal(got: dict[int, Outcome], what: str) -> None:
    first_seed = min(got)
    first = got[first_seed]
    for seed, run in got.items():
        if run != first:
            diff = [f"  {a}\n  {b}" for a, b in zip(first[0] + first[1], run[0] + run[1]) if a != b][:3]
            raise AssertionError(f"{what} seed {seed} differs from seed {first_seed}:\n" + "\n".join(diff)
                                 + f"\n(lengths {len(first[0])}/{len(run[0])} records)")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_engine_records_the_same_history_whatever_order_trio_runs_ready_tasks(name: str) -> None:
    got, schedules = _outcomes_by_seed(name, TRIO_SEEDS, stepping=False)
    assert schedules > len(TRIO_SEEDS) // 2  # the seeds did make trio run the tasks in other orders
    _assert_all_equal(got, f"{name!r} under trio's scheduler:")
    history, replies = got[0]
    assert len(history) > 5 and replies  # the scenario did run
    assert "cancelled" in " ".join(replies) or "cancel" not in name  # a cancel landed where it says


@pytest.mark.parametrize("name", sorted(set(SCENARIOS) - set(NOT_STEPPED)))
def test_the_engine_records_the_same_history_under_every_stepping_seed(name: str) -> None:
    got, schedules = _outcomes_by_seed(name, STEPPING_SEEDS, stepping=True)
    assert schedules > len(STEPPING_SEEDS) // 2
    _assert_all_equal(got, f"{name!r} under the stepping scheduler:")
    assert got[0] == _outcomes_by_seed(name, range(1), stepping=False)[0][0]  # and the same as live
