"""Messages of a system of agents: turns through the switchboard, messages and questions
between agents keyed so that a call run again finds what it did, and the system's own log.
"""

from __future__ import annotations

from ._system import (
    ClaimTurn,
    FindInputs,
    FindMessage,
    GivenInput,
    InputsDone,
    InputsFound,
    InputsGiven,
    MessageFound,
    ReleaseTurn,
    SwitchboardReply,
    SwitchboardRequest,
    SystemDeclared,
    SystemLookup,
    SystemLookupReply,
    SystemMember,
    SystemRecord,
    TurnGranted,
    TurnRefused,
)

__all__ = [
    "ClaimTurn",
    "FindInputs",
    "FindMessage",
    "GivenInput",
    "InputsDone",
    "InputsFound",
    "InputsGiven",
    "MessageFound",
    "ReleaseTurn",
    "SwitchboardReply",
    "SwitchboardRequest",
    "SystemDeclared",
    "SystemLookup",
    "SystemLookupReply",
    "SystemMember",
    "SystemRecord",
    "TurnGranted",
    "TurnRefused",
]
