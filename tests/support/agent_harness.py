"""A test harness for the agent layer: one agent on a ``memory:`` store, driven step by step.

Not a test module (pytest collects ``test_*.py`` only); the agent tests import it as
``tests.support.agent_harness``::

    async with open_agent([{"text": "hi"}], inputs=["hello"]) as h:
        done = await h.step()
        assert done.to_state is EngineState.PENDING_INPUT
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.testing
from attrs import define, field

from livecontext.actors.agent import _agent as agent_module
from livecontext.actors.apps import App, ToolOutcome, tool
from livecontext.actors.history import ContextPolicy, HistoryLimits, HistoryState, load_state
from livecontext.actors.recap import RecapSettings
from livecontext.protocol.agent import (
    AgentStatus,
    AppEffects,
    Cancel,
    GetAppEffects,
    GetStatus,
    GetTail,
    Idle,
    NotificationPosted,
    PostNotification,
    ProvideInput,
    Render,
    Rendered,
    RunUntilIdle,
    StateTransition,
    Step,
    StepDone,
    Tail,
)
from livecontext.protocol.context import HistorySlice, ReadHistory
from livecontext.protocol.history import HistoryEntry, ModelReply, ModelRequest
from livecontext.protocol.kernel import Message
from livecontext.protocol.records import AppHistory
from livecontext.protocol.wire import make_converter
from livecontext.runtime import Context, Runtime, open_runtime
from livecontext.runtime.models import (
    ModelClient,
    RetryingModel,
    RetryPolicy,
    ScriptedModel,
    TextCallback,
)
from livecontext.runtime.persistence import EventStore, open_store
from livecontext.runtime.testing import actor_instance
from livecontext.runtime.tokens import TokenCounter

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.002)
"""Three attempts with waits of a millisecond or two."""


@functools.cache
def counter() -> TokenCounter:
    """One token counter for every test (loading an encoding takes a moment)."""
    return TokenCounter()


@define
class AgentHarness:
    """A running agent, a client to drive it, and every engine event it published."""

    rt: Runtime
    agent: agent_module.AgentActors
    client: Context
    model: ModelClient
    store: EventStore
    """The ``memory:`` store the thread (and any sub-agent's) lives in."""
    events: list[Message] = field(factory=list)
    """Every engine event so far, in publication order."""

    async def step(self, timeout: float = 10.0) -> StepDone:
        done = await self.client.ask(self.agent.engine, Step(), timeout=timeout)
        assert isinstance(done, StepDone)
        return done

    async def run_until_idle(self, max_steps: int | None = None, timeout: float = 10.0) -> Idle:
        idle = await self.client.ask(self.agent.engine, RunUntilIdle(max_steps), timeout=timeout)
        assert isinstance(idle, Idle)
        return idle

    async def cancel(self, timeout: float = 10.0) -> None:
        await self.client.ask(self.agent.engine, Cancel(), timeout=timeout)

    async def provide(self, text: str) -> None:
        await self.client.tell(self.agent.input, ProvideInput(text))

    async def notify(self, text: str) -> NotificationPosted:
        posted = await self.client.ask(self.agent.history, PostNotification(text))
        assert isinstance(posted, NotificationPosted)
        return posted

    async def tail(self) -> Tail:
        tail = await self.client.ask(self.agent.history, GetTail())
        assert isinstance(tail, Tail)
        return tail

    async def status(self) -> AgentStatus:
        got = await self.client.ask(self.agent.history, GetStatus())
        assert isinstance(got, AgentStatus)
        return got

    async def entries(self) -> tuple[HistoryEntry, ...]:
        got = await self.client.ask(self.agent.history, ReadHistory(include_folded=True))
        assert isinstance(got, HistorySlice)
        return got.entries

    async def logged(self) -> HistoryState:
        """The thread's state as its log in the store holds it, rebuilt by a reader (as a
        process that opens the thread would)."""
        async with await self.store.open_reader(self.agent.thread_id) as reader:
            return await load_state(reader, make_converter(), self.agent.thread_id)

    async def app_histories(self) -> tuple[AppHistory, ...]:
        """What the history store keeps to rebuild each app: its saved state, the effects after."""
        got = await self.client.ask(self.agent.history, GetAppEffects())
        assert isinstance(got, AppEffects)
        return got.apps

    async def effects(self) -> tuple[Message, ...]:
        """The apps' own effects the history store keeps (those after each app's saved state)."""
        return tuple(e.effect for history in await self.app_histories() for e in history.effects)

    async def render(self, budget: int, windows: str = "") -> Rendered:
        got = await self.client.ask(self.agent.history, Render(budget, windows))
        assert isinstance(got, Rendered)
        return got

    async def settle(self) -> None:
        """Let every event published so far reach :attr:`events`."""
        await trio.testing.wait_all_tasks_blocked()

    def of_type(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def transitions(self) -> list[tuple[str, str]]:
        return [(e.from_state.value, e.to_state.value) for e in self.of_type(StateTransition)]


class ProbeModel(ModelClient):
    """Wraps a client and records every attempt: its request, and whether it was cancelled."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner
        self.name = inner.name
        self.requests: list[ModelRequest] = []
        self.cancelled = 0
        self.finished = 0
        self.started = trio.Event()
        self.gate: trio.Event | None = None
        """If set, each attempt waits for it before asking ``inner``."""

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.requests.append(request)
        self.started.set()
        try:
            if self.gate is not None:
                await self.gate.wait()
            reply = await self.inner.complete(request, on_text)
        except trio.Cancelled:
            self.cancelled += 1
            raise
        self.finished += 1
        return reply

    async def aclose(self) -> None:
        await self.inner.aclose()


@define
class Probe:
    """What the tools of a :class:`ProbeApp` saw (shared by every instance the host makes)."""

    calls: list[str] = field(factory=list)
    """Labels of ``record`` calls, and ``slow``/``slow_once`` starts, in order."""
    cancelled: list[str] = field(factory=list)
    """Slow tools that saw ``trio.Cancelled``."""
    finished: list[str] = field(factory=list)
    """Slow tools that ran to their end."""
    started: trio.Event = field(factory=trio.Event)
    """Set when a slow tool starts."""
    slow_runs_left: int = 1
    """How many ``slow`` calls really sleep; later ones return at once."""


class ProbeApp(App):
    """A test app whose tools record what happens to them."""

    name = "probe"

    def __init__(self, probe: Probe | None = None) -> None:
        self.probe = probe if probe is not None else Probe()

    def fresh(self) -> ProbeApp:
        return type(self)(self.probe)

    def view(self) -> str:
        return "PROBE-WINDOW"

    @tool(idempotent=True)
    def record(self, label: str) -> ToolOutcome:
        """Record a label.

        Args:
            label: What to record.
        """
        self.probe.calls.append(label)
        return ToolOutcome.ok(f"recorded {label}", f"recorded {label}", f"recorded {label}")

    @tool(idempotent=True)
    def explode(self, why: str) -> ToolOutcome:
        """Raise an exception.

        Args:
            why: The exception's message.
        """
        raise RuntimeError(why)

    @tool(idempotent=True)
    async def slow(self, seconds: float) -> ToolOutcome:
        """Sleep (the first ``slow_runs_left`` calls), then succeed.

        Args:
            seconds: How long to sleep.
        """
        return await self._sleep("slow", seconds)

    @tool
    async def slow_once(self, seconds: float) -> ToolOutcome:
        """Like slow, but not idempotent.

        Args:
            seconds: How long to sleep.
        """
        return await self._sleep("slow_once", seconds)

    async def _sleep(self, name: str, seconds: float) -> ToolOutcome:
        self.probe.calls.append(name)
        if self.probe.slow_runs_left > 0:
            self.probe.slow_runs_left -= 1
            self.probe.started.set()
            try:
                await trio.sleep(seconds)
            except trio.Cancelled:
                self.probe.cancelled.append(name)
                raise
        self.probe.finished.append(name)
        return ToolOutcome.ok(f"{name} done", f"{name} done", f"{name} done")


def scripted(turns: Sequence[Mapping[str, Any]], retry: RetryPolicy | None = FAST_RETRY) -> ModelClient:
    """A scripted model, wrapped in fast retries unless ``retry`` is ``None``."""
    model = ScriptedModel.from_turns(turns, name="test-script")
    return RetryingModel(model, retry) if retry is not None else model


@asynccontextmanager
async def open_agent(
    turns: Sequence[Mapping[str, Any]] = (), *, inputs: Sequence[str] = (),
    model: ModelClient | None = None, apps: Sequence[App] | None = None,
    retry: RetryPolicy | None = FAST_RETRY, budget: int = 8000,
    system_prompt: str | None = "You are a test agent.", thread_id: str = "t1",
    tool_timeout_s: float | None = None, listen: bool = True, pin_task: bool = True,
    limits: HistoryLimits | None = None, recap: RecapSettings | None = None, lifecycle: bool = True,
    store: str = "memory:", snapshot_every: int = 1000, context: ContextPolicy = ContextPolicy(),
) -> AsyncIterator[AgentHarness]:
    """Spawn an agent on a fresh ``memory:`` store (or the thread of ``store``, resumed if it
    exists) and collect its events while the block runs (``listen=False``: nobody subscribes
    to them, as in a fleet nobody watches)."""
    client_model = model if model is not None else scripted(turns, retry)
    settings = agent_module.AgentSettings(thread_id=thread_id, system_prompt=system_prompt, budget=budget,
                                          pin_task=pin_task, limits=limits, recap=recap, lifecycle=lifecycle,
                                          snapshot_every=snapshot_every, context=context)
    async with await open_store(store) as opened:
        log = await opened.open_thread(thread_id, create=True, owner="tests")
        async with log:
            async with open_runtime() as rt:
                agent = await agent_module.spawn_agent(
                    rt, log, client_model, settings, converter=make_converter(), counter=counter(),
                    inputs=inputs, apps=apps)
                if tool_timeout_s is not None:
                    actor_instance(agent.engine).tool_timeout_s = tool_timeout_s
                harness = AgentHarness(rt, agent, rt.client("test"), client_model, opened)
                if not listen:
                    yield harness
                    return
                async with rt.open_subscription(agent.events, buffer=4096) as events:
                    async with trio.open_nursery() as nursery:
                        async def collect() -> None:
                            async for env in events:
                                harness.events.append(env.payload)

                        nursery.start_soon(collect)
                        yield harness
                        await harness.settle()
                        nursery.cancel_scope.cancel()
