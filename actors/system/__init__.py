"""Systems of agents: opening one (:func:`open_system`), its log (and forking it whole at a
system seq, :func:`fork_system`), the switchboard that gives out its agents' turns, a turn, and
the messaging app through which its agents ask each other.

Its modules are imported on first use of a name (see ``__getattr__``): the CLI's light commands
take a few names of it without loading the rest (the agents' actors, the model clients)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (for type checkers and readers; at run time, see __getattr__)
    from ._messaging import Directory, Messaging
    from ._running import (
        AgentAnswer,
        InputsRun,
        System,
        SystemAgent,
        SystemAgentStatus,
        SystemStatus,
        open_system,
    )
    from ._switchboard import Switchboard
    from ._system_log import (
        ForkedThread,
        SYSTEM_LOG_PREFIX,
        SystemExistsError,
        SystemFork,
        SystemNotFoundError,
        SystemSeqPastEndError,
        check_system_name,
        fork_system,
        read_system_log,
        system_log_id,
        system_threads,
    )
    from ._turns import AgentAddress, TurnRefusedError

_HOMES = {
    "AgentAddress": "_turns",
    "AgentAnswer": "_running",
    "Directory": "_messaging",
    "ForkedThread": "_system_log",
    "InputsRun": "_running",
    "Messaging": "_messaging",
    "SYSTEM_LOG_PREFIX": "_system_log",
    "Switchboard": "_switchboard",
    "System": "_running",
    "SystemAgent": "_running",
    "SystemAgentStatus": "_running",
    "SystemExistsError": "_system_log",
    "SystemFork": "_system_log",
    "SystemNotFoundError": "_system_log",
    "SystemSeqPastEndError": "_system_log",
    "SystemStatus": "_running",
    "TurnRefusedError": "_turns",
    "check_system_name": "_system_log",
    "fork_system": "_system_log",
    "open_system": "_running",
    "read_system_log": "_system_log",
    "system_log_id": "_system_log",
    "system_threads": "_system_log",
}
"""The module of this package that defines each name."""


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
    "AgentAddress",
    "AgentAnswer",
    "Directory",
    "ForkedThread",
    "InputsRun",
    "Messaging",
    "SYSTEM_LOG_PREFIX",
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
    "check_system_name",
    "fork_system",
    "open_system",
    "read_system_log",
    "system_log_id",
    "system_threads",
]
