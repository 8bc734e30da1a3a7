"""Sub-agents as a tool: the engine spawns a sub-agent, whose answer returns as a tool result."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import trio

from livecontext.protocol import (
    Entries,
    Idle,
    Message,
    ModelOutputEntry,
    ReadEntries,
    RunUntilIdle,
    make_converter,
)
from livecontext.runtime import Context, LivecontextError
from livecontext.runtime.models import ModelClient
from livecontext.runtime.persistence import open_store
from livecontext.runtime.tokens import TokenCounter

from .apps import App, ToolFailure, ToolOutcome, tool

ModelFactory = Callable[[], ModelClient]
"""Makes the model client of each sub-agent."""


class SubAgents(App):
    """An app whose tool runs a sub-agent on a task and returns its final answer.

    Each sub-agent is a whole agent (engine, history store on an in-memory log, notebook)
    spawned in the same runtime, run until it waits for input, then stopped. A sub-agent that
    fails, or takes longer than ``timeout_s``, gives a failed result: the parent carries on.
    """

    name = "subagents"

    def __init__(self, model_factory: ModelFactory | None = None, *, timeout_s: float = 60.0,
                 max_steps: int = 40) -> None:
        self.model_factory = model_factory
        self.timeout_s = timeout_s
        self.max_steps = max_steps
        self.ctx: Context | None = None
        self.runs = 0
        self._ids = itertools.count(1)

    def fresh(self) -> SubAgents:
        return SubAgents(self.model_factory, timeout_s=self.timeout_s, max_steps=self.max_steps)

    def bind(self, ctx: Context) -> None:
        self.ctx = ctx

    def view(self) -> str:
        return f"{self.runs} sub-agent run(s) so far; call spawn_subagent(task) to delegate a task."

    def apply(self, effect: Message) -> None:
        super().apply(effect)

    def state_text(self) -> str:
        return '{"version": 1}'

    def load_state(self, text: str) -> None:
        pass

    @tool
    async def spawn_subagent(self, task: str) -> ToolOutcome:
        """Delegate a task to a sub-agent and wait for its answer.

        Args:
            task: What the sub-agent should do, in full: it sees nothing else.
        """
        from ._agent import AgentSettings, spawn_agent  # the app is wired by _agent

        if self.ctx is None or self.model_factory is None:
            raise ToolFailure("sub-agents are not configured in this agent (no model for them)")
        if not task.strip():
            raise ToolFailure("task is empty: describe what the sub-agent should do")
        rt = self.ctx.runtime
        parent = self.ctx.self_id.name
        thread_id = f"{parent}.sub{next(self._ids)}"
        self.runs += 1
        store = await open_store("memory:")
        async with store:
            log = await store.open_thread(thread_id, owner=str(self.ctx.self_id))
            async with log, self.model_factory() as model:
                agent = await spawn_agent(rt, log, model, AgentSettings(thread_id=thread_id),
                                          converter=make_converter(), counter=TokenCounter.from_env(),
                                          inputs=[task])
                refs = (agent.engine, agent.input, agent.apps, agent.history)
                try:
                    with trio.move_on_after(self.timeout_s) as scope:
                        idle = await self.ctx.ask(agent.engine, RunUntilIdle(self.max_steps), timeout=None)
                        entries = await self.ctx.ask(agent.history, ReadEntries())
                finally:
                    with trio.CancelScope(shield=True):
                        for ref in refs:
                            await rt.stop(ref, drain_timeout=1.0)
        if scope.cancelled_caught:
            raise ToolFailure(f"sub-agent {thread_id} timed out after {self.timeout_s:g} s")
        assert isinstance(idle, Idle) and isinstance(entries, Entries)
        if idle.reason.startswith("failed"):
            raise ToolFailure(f"sub-agent {thread_id} failed: {idle.reason}")
        answers = [e for e in entries.entries if isinstance(e, ModelOutputEntry)]
        if not answers:
            raise LivecontextError(f"sub-agent {thread_id} stopped without answering")
        answer = answers[-1].content.live.text
        return ToolOutcome.ok(answer, answer, f"sub-agent {thread_id} answered: {answers[-1].content.gist.text}")
