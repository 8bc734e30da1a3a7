"""livecontext: an actor-model runtime, on Trio, for LLM agents whose context is live.

The front door (re-exports only)::

    import livecontext, trio

    @livecontext.tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    async def main() -> None:
        async with livecontext.open_agent(model="echo", tools=[add], store="memory:") as agent:
            reply = await agent.send("hello")
            print(reply.text, reply.state)

    trio.run(main)

The layers below are ``livecontext.actors`` (engine, history, apps, recap, analyzers,
blueprints, CLI), ``livecontext.runtime`` (the actor kernel, stores, model clients) and
``livecontext.protocol`` (the messages, pure data).
"""

from __future__ import annotations

from livecontext.actors._front import Agent, AgentEvent, AgentState, Reply, open_agent
from livecontext.actors._system import AgentAnswer, System, open_system
from livecontext.actors.analyzers import AnalyzerSettings
from livecontext.actors.apps import (
    App,
    AppDefinitionError,
    AppStateError,
    ToolDefinitionError,
    ToolFailure,
    ToolOutcome,
    tool,
)
from livecontext.actors.blueprint import BlueprintError
from livecontext.actors.history import BudgetTooSmallError, HistoryLimits
from livecontext.actors.recap import RecapSettings
from livecontext.protocol import AgentStatus, EngineState, Level, Retention, TaskStatus
from livecontext.runtime import UsageError

__all__ = [
    "Agent",
    "AgentAnswer",
    "AgentEvent",
    "AgentState",
    "AgentStatus",
    "AnalyzerSettings",
    "App",
    "AppDefinitionError",
    "AppStateError",
    "BlueprintError",
    "BudgetTooSmallError",
    "EngineState",
    "HistoryLimits",
    "Level",
    "RecapSettings",
    "Reply",
    "Retention",
    "System",
    "TaskStatus",
    "ToolDefinitionError",
    "ToolFailure",
    "ToolOutcome",
    "UsageError",
    "open_agent",
    "open_system",
    "tool",
]
