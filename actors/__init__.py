"""The actors of an agent: engine, history store, app host and apps, input source, CLI;
systems of agents (:func:`open_system`), forked whole at a system seq (:func:`fork_system`)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (for type checkers and readers; at run time, see __getattr__)
    from .agent import AgentActors, AgentSettings, spawn_agent
    from .agent import AppHost
    from .agent import InputSource, InputTooLargeError
    from ._messaging import Directory, Messaging
    from .agent import SubAgents
    from ._switchboard import Switchboard
    from ._system import (
        AgentAnswer,
        InputsRun,
        System,
        SystemAgent,
        SystemAgentStatus,
        SystemStatus,
        open_system,
    )
    from .agent import check_thread_id, parent_thread_id, sub_thread_id
    from ._system_log import (
        ForkedThread,
        SystemExistsError,
        SystemFork,
        SystemNotFoundError,
        SystemSeqPastEndError,
        fork_system,
    )
    from ._turns import AgentAddress, TurnRefusedError

_HOMES = {
    "AgentActors": "agent",
    "AgentAddress": "_turns",
    "AgentAnswer": "_system",
    "AgentSettings": "agent",
    "AppHost": "agent",
    "Directory": "_messaging",
    "ForkedThread": "_system_log",
    "InputSource": "agent",
    "InputTooLargeError": "agent",
    "InputsRun": "_system",
    "Messaging": "_messaging",
    "SubAgents": "agent",
    "Switchboard": "_switchboard",
    "System": "_system",
    "SystemAgent": "_system",
    "SystemAgentStatus": "_system",
    "SystemExistsError": "_system_log",
    "SystemFork": "_system_log",
    "SystemNotFoundError": "_system_log",
    "SystemSeqPastEndError": "_system_log",
    "SystemStatus": "_system",
    "TurnRefusedError": "_turns",
    "check_thread_id": "agent",
    "fork_system": "_system_log",
    "open_system": "_system",
    "parent_thread_id": "agent",
    "spawn_agent": "agent",
    "sub_thread_id": "agent",
}
"""The module of this package that defines each name: imported on first use, so that importing
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
