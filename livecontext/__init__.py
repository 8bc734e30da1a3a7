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
``livecontext.protocol`` (the messages, pure data, in modules named for what they hold).
"""

from __future__ import annotations

_HOMES = {
    "Agent": "actors.front",
    "AgentAnswer": "actors.system",
    "AgentEvent": "actors.front",
    "AgentSpec": "actors.front",
    "AgentState": "actors.front",
    "AgentStatus": "protocol.agent",
    "AnalyzerSettings": "actors.analyzers",
    "App": "actors.apps",
    "AppDefinitionError": "actors.apps",
    "AppStateError": "actors.apps",
    "BlueprintError": "actors.blueprint",
    "McpServer": "actors.mcp",
    "McpServerError": "actors.mcp",
    "BudgetTooSmallError": "actors.history",
    "ContextPolicy": "actors.history",
    "EngineState": "protocol.history",
    "HistoryLimits": "actors.history",
    "InputTooLargeError": "actors",
    "Level": "protocol.history",
    "Price": "runtime.models",
    "RecapSettings": "actors.recap",
    "Reply": "actors.front",
    "Retention": "protocol.history",
    "SpendLimits": "actors.spend",
    "SpendLimitsError": "actors.spend",
    "SyncAgent": "actors.front",
    "System": "actors.system",
    "TaskStatus": "protocol.history",
    "ToolContext": "protocol.history",
    "ToolDefinitionError": "actors.apps",
    "ToolFailure": "actors.apps",
    "ToolOutcome": "actors.apps",
    "UsageError": "runtime",
    "open_agent": "actors.front",
    "open_system": "actors.system",
    "open_sync_agent": "actors.front",
    "run_agent": "actors.front",
    "idempotency_key": "protocol.history",
    "tool": "actors.apps",
}
"""The front door's names, each with the module it lives in (below ``livecontext``): imported on
first use, so that ``import livecontext`` (and the ``livecontext`` command's start, which a
Ctrl-C may interrupt) costs nothing until a name is used. This table is the list of the front
door's names: ``__all__`` and ``__getattr__`` read it."""

__all__ = [*_HOMES]

TYPE_CHECKING = False  # (not typing's: the command's start imports nothing it can do without)
if TYPE_CHECKING:
    # Type checkers and IDEs run no __getattr__: this block shows them each name of _HOMES
    # (imported "as" itself: a re-export), with its type. tests/test_lazy_exports.py checks
    # that it names the same names, from the same modules, as the table.
    from typing import Any

    from livecontext.actors import InputTooLargeError as InputTooLargeError
    from livecontext.actors.analyzers import AnalyzerSettings as AnalyzerSettings
    from livecontext.actors.apps import (
        App as App,
        AppDefinitionError as AppDefinitionError,
        AppStateError as AppStateError,
        ToolDefinitionError as ToolDefinitionError,
        ToolFailure as ToolFailure,
        ToolOutcome as ToolOutcome,
        tool as tool,
    )
    from livecontext.actors.blueprint import BlueprintError as BlueprintError
    from livecontext.actors.mcp import McpServer as McpServer
    from livecontext.actors.mcp import McpServerError as McpServerError
    from livecontext.actors.front import (
        Agent as Agent,
        AgentEvent as AgentEvent,
        AgentSpec as AgentSpec,
        AgentState as AgentState,
        Reply as Reply,
        SyncAgent as SyncAgent,
        open_agent as open_agent,
        open_sync_agent as open_sync_agent,
        run_agent as run_agent,
    )
    from livecontext.actors.history import (
        BudgetTooSmallError as BudgetTooSmallError,
        ContextPolicy as ContextPolicy,
        HistoryLimits as HistoryLimits,
    )
    from livecontext.actors.recap import RecapSettings as RecapSettings
    from livecontext.actors.spend import SpendLimits as SpendLimits, SpendLimitsError as SpendLimitsError
    from livecontext.actors.system import (
        AgentAnswer as AgentAnswer,
        System as System,
        open_system as open_system,
    )
    from livecontext.protocol.agent import AgentStatus as AgentStatus
    from livecontext.protocol.history import (
        EngineState as EngineState,
        Level as Level,
        Retention as Retention,
        TaskStatus as TaskStatus,
        ToolContext as ToolContext,
        idempotency_key as idempotency_key,
    )
    from livecontext.runtime import UsageError as UsageError
    from livecontext.runtime.models import Price as Price


def __getattr__(name: str) -> Any:
    from livecontext._lazy import attribute  # (on first use: the command's start loads nothing more)

    return attribute(__name__, _HOMES, name)


def __dir__() -> list[str]:
    from livecontext._lazy import names

    return names(__name__, _HOMES)
