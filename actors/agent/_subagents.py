"""Sub-agents as a tool: the engine spawns a sub-agent, whose answer returns as a tool result.

A sub-agent's thread lives in its parent's store, as ``PARENT/sub/NAME``: it shows in
``livecontext threads`` beside its parent, its records in ``audit`` (sent by
``engine/PARENT/sub/NAME``...), and it survives a crash of the parent's process. NAME comes
from the id of the tool call that spawned it, which the parent's log keeps: when the parent
resumes after a crash and runs the interrupted call again (the tool is idempotent), the call
finds the same thread and resumes it where it stopped, instead of starting the task over.
"""

from __future__ import annotations

import random
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import trio

from livecontext.protocol.agent import (
    AgentStatus,
    GetStatus,
    GetTail,
    Idle,
    IdleReason,
    InvokeTool,
    ProvideInput,
    RunUntilIdle,
    Tail,
)
from livecontext.protocol.history import EngineState, ModelOutputEntry, ModelReply, ModelRequest, TaskStatus
from livecontext.protocol.kernel import ActorId
from livecontext.runtime import ActorRef, Context, LivecontextError, Runtime
from livecontext.runtime.models import ModelClient, RetryingModel, make_model_client
from livecontext.runtime.persistence import EventStore, SystemClock, ThreadLockedError, ThreadLog, ThreadNotFoundError

from ._thread_ids import sub_thread_id
from ._answer import final_answer
from ..apps import App, ToolFailure, ToolOutcome, tool

ModelFactory = Callable[[], ModelClient]
"""Makes the model client of each sub-agent."""


class SubAgent(Protocol):
    """The running actors of a sub-agent the app talks to (an :class:`~livecontext.actors.AgentActors`)."""

    @property
    def engine(self) -> ActorRef[Any]: ...

    @property
    def history(self) -> ActorRef[Any]: ...

    @property
    def apps(self) -> ActorRef[Any]: ...

    @property
    def input(self) -> ActorRef[Any]: ...


SpawnAgent = Callable[[Runtime, ThreadLog, ModelClient, str, ActorId | None], Awaitable[SubAgent]]
"""Spawns a sub-agent of default settings on a thread (its log), its model and the spend ledger it
spends from: the agent that hosts the app gives it its way to spawn agents (see :func:`give_spawn`),
so that this module does not import the agent's."""

_DEFAULTS: Mapping[str, Any] = {"timeout_s": 60.0, "max_steps": 40}
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:@+-]")


def subagent_name(call_id: str) -> str:
    """The name of the sub-agent a tool call spawns: the call's id, made safe for a thread id."""
    return _UNSAFE.sub("-", call_id)[:64] or "sub"


class SubAgents(App):
    """An app whose tool runs a sub-agent on a task and returns its final answer.

    Each sub-agent is a whole agent (engine, history store, notebook) spawned in the same
    runtime on a thread of the parent's store (see the module docstring), run until it waits
    for input, then stopped; its thread stays in the store. A sub-agent that fails, or takes
    longer than ``timeout_s``, gives a failed result: the parent carries on.

    ``store`` is the parent's store, ``clock`` its thread's system clock (if it belongs to a
    system: a sub-agent's records are the system's too), ``spend`` the spend ledger of the
    parent's limits (a sub-agent spends from them); :func:`~livecontext.actors.spawn_agent`
    gives them to every ``SubAgents`` app it spawns without a store.
    """

    name = "subagents"

    def __init__(self, model_factory: ModelFactory | None = None, *, model: str | None = None,
                 timeout_s: float = 60.0, max_steps: int = 40, store: EventStore | None = None,
                 clock: SystemClock | None = None, spend: ActorId | None = None) -> None:
        if model is not None and model_factory is not None:
            raise TypeError("give the sub-agents' model as model_factory or as a model spec, not both")
        if model is not None:
            make_model_client(model)  # (a spec that names no model is refused here, in one line)
        self.model_factory = model_factory
        self.model = model
        """The sub-agents' model spec (``echo``, ``scripted:PATH``, ``openai:MODEL``), when the app is
        made from a blueprint or ``--app subagents``; neither it nor a factory: the parent's model."""
        self.timeout_s = timeout_s
        self.max_steps = max_steps
        self.store = store
        self.clock = clock
        self.spend = spend
        self.spawn: SpawnAgent | None = None
        """How it spawns a sub-agent: given by the agent that hosts it (:func:`give_spawn`)."""
        self.ctx: Context | None = None
        self.runs = 0

    def fresh(self) -> SubAgents:
        made = SubAgents(self.model_factory, model=self.model, timeout_s=self.timeout_s, max_steps=self.max_steps,
                         store=self.store, clock=self.clock, spend=self.spend)
        made.made_with = self.made_with
        made.spawn = self.spawn
        return made

    def options(self) -> Mapping[str, Any] | None:
        """What makes it again on a resumed thread: its model spec, timeout and steps (a factory
        given in Python is not recorded: the resumed parent's model is used)."""
        given = {"model": self.model, "timeout_s": self.timeout_s, "max_steps": self.max_steps}
        made = {key: value for key, value in given.items()
                if value is not None and value != _DEFAULTS.get(key)}
        return made or None

    def _models(self) -> ModelFactory | None:
        if self.model_factory is not None:
            return self.model_factory
        spec = self.model
        if spec is not None:
            # (the retries' jitter from the runtime's clock: seeded under a VirtualClock)
            return lambda: RetryingModel(make_model_client(spec), rng=self._jitter())
        return None

    def _jitter(self) -> random.Random | None:
        return self.ctx.runtime.clock.random(f"retry:{self.ctx.self_id.name}/sub") if self.ctx is not None else None

    def bind(self, ctx: Context) -> None:
        self.ctx = ctx

    def view(self) -> str:
        return (f"{self.runs} sub-agent run(s) so far; call spawn_subagent(task) to delegate a task, "
                "message_subagent(name, message) to answer one that waits for you.")

    @tool(idempotent=True, waits_on_agent=True)  # run again after a crash, the call resumes its sub-agent's thread
    async def spawn_subagent(self, task: str) -> ToolOutcome:
        """Delegate a task to a sub-agent and wait for its answer.

        Args:
            task: What the sub-agent should do, in full: it sees nothing else.
        """
        models = self._ready()
        if not task.strip():
            raise ToolFailure("task is empty: describe what the sub-agent should do")
        assert self.ctx is not None
        thread_id = sub_thread_id(self.ctx.self_id.name, subagent_name(self._call_id()))
        self.runs += 1
        return await self._converse(models, thread_id, task, new=True)

    @tool(waits_on_agent=True)  # not run again after a crash: the sub-agent would read the message twice
    async def message_subagent(self, name: str, message: str) -> ToolOutcome:
        """Answer a sub-agent that waits for you (it called wait_parent) and wait for its next answer.

        Args:
            name: The sub-agent's name, as its answer said it (the NAME of sub-agent PARENT/sub/NAME).
            message: Your reply, in full.
        """
        models = self._ready()
        if not message.strip():
            raise ToolFailure("message is empty: say what the sub-agent should read")
        assert self.ctx is not None
        if _UNSAFE.search(name) or not name:
            raise ToolFailure(f"no sub-agent is named {name!r}: give the NAME its answer said (letters, digits, _.:@+-)")
        thread_id = sub_thread_id(self.ctx.self_id.name, name)
        return await self._converse(models, thread_id, message, new=False)

    def _ready(self) -> ModelFactory:
        models = self._models()
        if self.ctx is None or models is None:
            raise ToolFailure("sub-agents are not configured in this agent (no model for them)")
        if self.store is None:
            raise ToolFailure("sub-agents are not configured in this agent (no store for their threads)")
        if self.spawn is None:
            raise ToolFailure("sub-agents are not configured in this agent (it was not spawned by spawn_agent)")
        return models

    async def _converse(self, models: ModelFactory, thread_id: str, text: str, *, new: bool) -> ToolOutcome:
        """Run sub-agent ``thread_id`` on ``text`` (its task if ``new``, else its parent's reply
        to its ``wait_parent``) until it waits for input, and give its answer."""
        assert self.ctx is not None and self.store is not None and self.spawn is not None
        rt = self.ctx.runtime
        try:
            log = await self.store.open_thread(thread_id, create=new, owner=f"history/{thread_id}",
                                               clock=self.clock)
        except ThreadNotFoundError:
            raise ToolFailure(f"no sub-agent {thread_id}: message_subagent answers a sub-agent this agent spawned") from None
        except ThreadLockedError as exc:
            raise ToolFailure(f"sub-agent {thread_id} is being run by another writer: {exc.holder}") from None
        async with log, models() as model:
            agent = await self.spawn(rt, log, model, thread_id, self.spend)
            refs = (agent.engine, agent.input, agent.apps, agent.history)
            try:
                with trio.move_on_after(self.timeout_s) as scope:
                    if new:
                        idle = await self._run(agent, text)
                    else:
                        idle = await self._reply(agent, thread_id, text)
                    answer = await final_answer(self.ctx, agent.history)
                    status = await self.ctx.ask(agent.history, GetStatus())
            finally:
                with trio.CancelScope(shield=True):
                    for ref in refs:
                        await rt.stop(ref, drain_timeout=1.0)
        if scope.cancelled_caught:
            raise ToolFailure(f"sub-agent {thread_id} timed out after {self.timeout_s:g} s")
        if idle.reason is IdleReason.FAILED:
            raise ToolFailure(f"sub-agent {thread_id} failed: {idle.error}")
        if idle.reason is IdleReason.PAUSED and idle.limit:
            raise ToolFailure(f"sub-agent {thread_id} stopped before its next model call: {idle.limit}")
        if answer is None:
            raise LivecontextError(f"sub-agent {thread_id} stopped without answering")
        assert isinstance(status, AgentStatus)
        if status.status is TaskStatus.WAITING_PARENT:
            name = thread_id.rsplit("/", 1)[-1]
            live = (f"{answer}\n(sub-agent {name} waits for your reply: "
                    f'message_subagent({{"name": "{name}", "message": "..."}}))')
            return ToolOutcome.ok(live, live, f"sub-agent {thread_id} waits for its parent: {_line(answer)}")
        return ToolOutcome.ok(answer, answer, f"sub-agent {thread_id} answered: {_line(answer)}")

    async def _reply(self, agent: SubAgent, thread_id: str, message: str) -> Idle:
        """Give a sub-agent that called ``wait_parent`` its parent's reply, run it until it waits
        for input again."""
        assert self.ctx is not None
        status = await self.ctx.ask(agent.history, GetStatus())
        assert isinstance(status, AgentStatus)
        if status.status is not TaskStatus.WAITING_PARENT:
            raise ToolFailure(f"sub-agent {thread_id} does not wait for a message (it is {status.status.value}); "
                              "message_subagent answers a sub-agent that called wait_parent")
        await self.ctx.ask(agent.input, ProvideInput(message))
        idle = await self.ctx.ask(agent.engine, RunUntilIdle(self.max_steps), timeout=None)
        assert isinstance(idle, Idle)
        return idle

    async def _run(self, agent: SubAgent, task: str) -> Idle:
        """Feed ``task`` to a new sub-agent thread (a resumed one has it already), run it until
        it waits for input."""
        assert self.ctx is not None
        tail = await self.ctx.ask(agent.history, GetTail())
        assert isinstance(tail, Tail)
        if tail.state is EngineState.WAITING_INPUT and tail.entries == 0:
            await self.ctx.ask(agent.input, ProvideInput(task))
        idle = await self.ctx.ask(agent.engine, RunUntilIdle(self.max_steps), timeout=None)
        assert isinstance(idle, Idle)
        return idle

    def _call_id(self) -> str:
        """The id of the tool call being run (the host hands it over in an ``InvokeTool``)."""
        assert self.ctx is not None
        current = self.ctx.current
        if current is None or not isinstance(current.payload, InvokeTool):
            raise LivecontextError("spawn_subagent must run inside an app host's InvokeTool")
        return current.payload.call.id


def _line(text: str, limit: int = 120) -> str:
    """The first line of ``text``, cut to ``limit`` characters (a gist)."""
    first = text.strip().split("\n", 1)[0]
    return first if len(first) <= limit else first[: limit - 1] + "…"

def give_store(apps: Sequence[App], store: EventStore, clock: SystemClock | None = None,
               spend: ActorId | None = None, model: ModelClient | None = None) -> None:
    """Give ``store``, ``clock`` and ``spend`` (the parent's) to each :class:`SubAgents` app of
    ``apps`` that has no store, and ``model`` (the parent's client, shared: a sub-agent does
    not close it) to each that has no model of its own."""
    for app in apps:
        if isinstance(app, SubAgents):
            if app.store is None:
                app.store = store
                app.clock = clock
                app.spend = spend
            if app.model_factory is None and app.model is None and model is not None:
                shared = model
                app.model_factory = lambda: _Shared(shared)


def give_spawn(apps: Sequence[App], spawn: SpawnAgent) -> None:
    """Give ``spawn``, the hosting agent's way to spawn an agent, to each :class:`SubAgents` app of
    ``apps`` (the instances its host runs: a subclass's :meth:`~SubAgents.fresh` need not copy it)."""
    for app in apps:
        if isinstance(app, SubAgents):
            app.spawn = spawn


class _Shared(ModelClient):
    """The parent's model client lent to a sub-agent: its calls go through, closing it does not
    close the parent's."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner
        self.name = inner.name

    async def complete(self, request: ModelRequest,
                       on_text: Callable[[str], None] | None = None) -> ModelReply:
        return await self.inner.complete(request, on_text)
