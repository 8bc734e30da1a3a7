"""The actors of an agent: engine, history store, app host and apps, input source, CLI;
systems of agents (:func:`open_system`), forked whole at a system seq (:func:`fork_system`).

Each part is a package used through its ``__init__``: ``agent/`` (one agent: its actors, app
host, input, sub-agents, session), ``system/`` (systems of agents), ``front/`` (the front door
for one agent), ``batch/`` (many tasks), beside ``engine/``, ``history/``, ``apps/`` and the
rest; pyproject.toml's import contract says which may import which."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from livecontext._lazy import attribute, names

_HOMES = {
    "AgentActors": "agent",
    "AgentAddress": "system",
    "AgentAnswer": "system",
    "AgentSettings": "agent",
    "AppHost": "agent",
    "Directory": "system",
    "ForkedThread": "system",
    "InputSource": "agent",
    "InputTooLargeError": "agent",
    "InputsRun": "system",
    "Messaging": "system",
    "SubAgents": "agent",
    "Switchboard": "system",
    "System": "system",
    "SystemAgent": "system",
    "SystemAgentStatus": "system",
    "SystemExistsError": "system",
    "SystemFork": "system",
    "SystemNotFoundError": "system",
    "SystemSeqPastEndError": "system",
    "SystemStatus": "system",
    "TurnRefusedError": "system",
    "check_thread_id": "agent",
    "fork_system": "system",
    "open_system": "system",
    "parent_thread_id": "agent",
    "spawn_agent": "agent",
    "sub_thread_id": "agent",
}
"""The wing of this package that exports each name: imported on first use, so that importing
one module of the package (the CLI's ``threads`` imports the history's) does not import the
whole of it (the agent's actors, the system, the model clients)."""

__all__ = [*_HOMES]

if TYPE_CHECKING:  # (type checkers run no __getattr__: the names of _HOMES, with their types)
    from .agent import (
        AgentActors as AgentActors,
        AgentSettings as AgentSettings,
        AppHost as AppHost,
        InputSource as InputSource,
        InputTooLargeError as InputTooLargeError,
        SubAgents as SubAgents,
        check_thread_id as check_thread_id,
        parent_thread_id as parent_thread_id,
        spawn_agent as spawn_agent,
        sub_thread_id as sub_thread_id,
    )
    from .system import (
        AgentAddress as AgentAddress,
        AgentAnswer as AgentAnswer,
        Directory as Directory,
        ForkedThread as ForkedThread,
        InputsRun as InputsRun,
        Messaging as Messaging,
        Switchboard as Switchboard,
        System as System,
        SystemAgent as SystemAgent,
        SystemAgentStatus as SystemAgentStatus,
        SystemExistsError as SystemExistsError,
        SystemFork as SystemFork,
        SystemNotFoundError as SystemNotFoundError,
        SystemSeqPastEndError as SystemSeqPastEndError,
        SystemStatus as SystemStatus,
        TurnRefusedError as TurnRefusedError,
        fork_system as fork_system,
        open_system as open_system,
    )


def __getattr__(name: str) -> Any:
    return attribute(__name__, _HOMES, name)


def __dir__() -> list[str]:
    return names(__name__, _HOMES)
