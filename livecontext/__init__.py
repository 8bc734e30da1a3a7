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

import importlib

TYPE_CHECKING = False  # (not typing's: the command's start imports nothing it can do without)
if TYPE_CHECKING:  # (for type checkers and readers; at run time, see __getattr__)
    from typing import Any

    from livecontext.actors.front import Agent, AgentEvent, AgentSpec, AgentState, Reply, open_agent
    from livecontext.actors.system import AgentAnswer, System, open_system
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
    from livecontext.actors import InputTooLargeError
    from livecontext.actors.history import BudgetTooSmallError, ContextPolicy, HistoryLimits
    from livecontext.actors.recap import RecapSettings
    from livecontext.actors.spend import SpendLimits, SpendLimitsError
    from livecontext.protocol import AgentStatus, EngineState, Level, Retention, TaskStatus
    from livecontext.runtime import UsageError
    from livecontext.runtime.models import Price

_HOMES = {
    "Agent": "livecontext.actors.front",
    "AgentAnswer": "livecontext.actors.system",
    "AgentEvent": "livecontext.actors.front",
    "AgentSpec": "livecontext.actors.front",
    "AgentState": "livecontext.actors.front",
    "AgentStatus": "livecontext.protocol",
    "AnalyzerSettings": "livecontext.actors.analyzers",
    "App": "livecontext.actors.apps",
    "AppDefinitionError": "livecontext.actors.apps",
    "AppStateError": "livecontext.actors.apps",
    "BlueprintError": "livecontext.actors.blueprint",
    "BudgetTooSmallError": "livecontext.actors.history",
    "ContextPolicy": "livecontext.actors.history",
    "EngineState": "livecontext.protocol",
    "HistoryLimits": "livecontext.actors.history",
    "InputTooLargeError": "livecontext.actors",
    "Level": "livecontext.protocol",
    "Price": "livecontext.runtime.models",
    "RecapSettings": "livecontext.actors.recap",
    "Reply": "livecontext.actors.front",
    "Retention": "livecontext.protocol",
    "SpendLimits": "livecontext.actors.spend",
    "SpendLimitsError": "livecontext.actors.spend",
    "System": "livecontext.actors.system",
    "TaskStatus": "livecontext.protocol",
    "ToolDefinitionError": "livecontext.actors.apps",
    "ToolFailure": "livecontext.actors.apps",
    "ToolOutcome": "livecontext.actors.apps",
    "UsageError": "livecontext.runtime",
    "open_agent": "livecontext.actors.front",
    "open_system": "livecontext.actors.system",
    "tool": "livecontext.actors.apps",
}
"""Where each name of the front door lives: imported on first use, so that ``import
livecontext`` (and the ``livecontext`` command's start, which a Ctrl-C may interrupt) costs
nothing until a name is used."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'livecontext' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "Agent",
    "AgentAnswer",
    "AgentEvent",
    "AgentSpec",
    "AgentState",
    "AgentStatus",
    "AnalyzerSettings",
    "App",
    "AppDefinitionError",
    "AppStateError",
    "BlueprintError",
    "BudgetTooSmallError",
    "ContextPolicy",
    "EngineState",
    "HistoryLimits",
    "InputTooLargeError",
    "Level",
    "Price",
    "RecapSettings",
    "Reply",
    "Retention",
    "SpendLimits",
    "SpendLimitsError",
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
