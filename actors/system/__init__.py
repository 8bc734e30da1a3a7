"""Systems of agents: opening one (:func:`open_system`), its log (and forking it whole at a
system seq, :func:`fork_system`), the switchboard that gives out its agents' turns, a turn, and
the messaging app through which its agents ask each other, and a system on asyncio
(:func:`open_aio_system`).

Its modules are imported on first use of a name (see ``__getattr__``): the CLI's light commands
take a few names of it without loading the rest (the agents' actors, the model clients)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from livecontext._lazy import attribute, names

_HOMES = {
    "AgentAddress": "_turns",
    "AgentAnswer": "_running",
    "AioSystem": "_aio",
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
    "open_aio_system": "_aio",
    "open_system": "_running",
    "read_system_log": "_system_log",
    "system_log_id": "_system_log",
    "system_threads": "_system_log",
}
"""The module of this package that defines each name."""

__all__ = [*_HOMES]

if TYPE_CHECKING:  # (type checkers run no __getattr__: the names of _HOMES, with their types)
    from ._aio import AioSystem as AioSystem, open_aio_system as open_aio_system
    from ._messaging import Directory as Directory, Messaging as Messaging
    from ._switchboard import Switchboard as Switchboard
    from ._running import (
        AgentAnswer as AgentAnswer,
        InputsRun as InputsRun,
        System as System,
        SystemAgent as SystemAgent,
        SystemAgentStatus as SystemAgentStatus,
        SystemStatus as SystemStatus,
        open_system as open_system,
    )
    from ._system_log import (
        SYSTEM_LOG_PREFIX as SYSTEM_LOG_PREFIX,
        ForkedThread as ForkedThread,
        SystemExistsError as SystemExistsError,
        SystemFork as SystemFork,
        SystemNotFoundError as SystemNotFoundError,
        SystemSeqPastEndError as SystemSeqPastEndError,
        check_system_name as check_system_name,
        fork_system as fork_system,
        read_system_log as read_system_log,
        system_log_id as system_log_id,
        system_threads as system_threads,
    )
    from ._turns import AgentAddress as AgentAddress, TurnRefusedError as TurnRefusedError


def __getattr__(name: str) -> Any:
    return attribute(__name__, _HOMES, name)


def __dir__() -> list[str]:
    return names(__name__, _HOMES)
