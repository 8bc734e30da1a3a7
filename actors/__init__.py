"""The actors of an agent: engine, history store, app host and apps, input source, CLI;
systems of agents (:func:`open_system`), forked whole at a system seq (:func:`fork_system`)."""

from __future__ import annotations

from ._agent import AgentActors, AgentSettings, check_thread_id, parent_thread_id, spawn_agent, sub_thread_id
from ._host import AppHost
from ._input import InputSource, InputTooLargeError
from ._messaging import Directory, Messaging
from ._subagents import SubAgents
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
from ._system_log import (
    ForkedThread,
    SystemExistsError,
    SystemFork,
    SystemNotFoundError,
    SystemSeqPastEndError,
    fork_system,
)
from ._turns import AgentAddress, TurnRefusedError

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
