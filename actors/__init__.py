"""The actors of an agent: engine, history store, app host and apps, input source, CLI;
systems of agents (:func:`open_system`), forked whole at a system seq (:func:`fork_system`).

Each part is a package used through its ``__init__``: ``agent/`` (one agent: its actors, app
host, input, sub-agents, session), ``system/`` (systems of agents), ``front/`` (the front door
for one agent), ``batch/`` (many tasks), beside ``engine/``, ``history/``, ``apps/`` and the
rest; pyproject.toml's import contract says which may import which."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (for type checkers and readers; at run time, see __getattr__)
    from .agent import (
        AgentActors,
        AgentSettings,
        AppHost,
        InputSource,
        InputTooLargeError,
        SubAgents,
        check_thread_id,
        parent_thread_id,
        spawn_agent,
        sub_thread_id,
    )
    from .system import (
        AgentAddress,
        AgentAnswer,
        Directory,
        ForkedThread,
        InputsRun,
        Messaging,
        Switchboard,
        System,
        SystemAgent,
        SystemAgentStatus,
        SystemExistsError,
        SystemFork,
        SystemNotFoundError,
        SystemSeqPastEndError,
        SystemStatus,
        TurnRefusedError,
        fork_system,
        open_system,
    )

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "AgentActors",
    "AgentAddress",
    "AgentAnswer",
    "AgentSettings",
    "AppHost",
    "Directory",
    "ForkedThread",
    "InputSource",
    "InputTooLargeError",
    "InputsRun",
    "Messaging",
    "SubAgents",
    "Switchboard",
    "System",
    "SystemAgent",
    "SystemAgentStatus",
    "SystemExistsError",
    "SystemFork",
    "SystemNotFoundError",
    "SystemSeqPastEndError",
    "SystemStatus",
    "TurnRefusedError",
    "check_thread_id",
    "fork_system",
    "open_system",
    "parent_thread_id",
    "spawn_agent",
    "sub_thread_id",
]
