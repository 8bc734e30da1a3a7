"""The closed list of tagged protocol classes the converter knows, built from the channels.

Each message is named once, in its module, and once in the closed union of its channel
(``EngineControl = Pause | Resume | ...``); the catalog reads the classes off those unions,
so a new message joins the converter by joining its channel (and is exported by the public
module of its channel: a test checks that each is exported once).
"""

from __future__ import annotations

import types
from typing import get_args

from ._agent import (
    AgentHistoryReply,
    AgentHistoryRequest,
    AppHostReply,
    AppHostRequest,
    EngineControl,
    EngineEvent,
    EngineReply,
    InputSourceReply,
    InputSourceRequest,
)
from ._approvals import ApprovalRecord, ApprovalReply, ApprovalRequest
from ._apps import StoredEffect
from ._context_mgmt import (
    ContextRecord,
    HistoryEditReply,
    HistoryEditRequest,
    LimitEvent,
    RecapRequest,
)
from ._entries import HistoryEntry
from ._kernel import KernelMessage
from ._lifecycle import ControlToolEffect, LifecycleRecord, StatusReply, StatusRequest
from ._mcp import McpHistoryRequest, McpRecord, McpReply, McpRequest
from ._records import ThreadRecord
from ._spend import SpendReply, SpendRequest
from ._windows import WindowRecord
from ._system import SwitchboardReply, SwitchboardRequest, SystemLookup, SystemLookupReply, SystemRecord

CHANNELS: tuple[object, ...] = (
    KernelMessage,
    EngineControl,
    EngineReply,
    EngineEvent,
    AgentHistoryRequest,
    AgentHistoryReply,
    HistoryEditRequest,
    HistoryEditReply,
    LimitEvent,
    RecapRequest,
    StatusRequest,
    StatusReply,
    ApprovalRequest,
    ApprovalReply,
    AppHostRequest,
    AppHostReply,
    InputSourceRequest,
    InputSourceReply,
    SwitchboardRequest,
    SwitchboardReply,
    SystemLookup,
    SystemLookupReply,
    SpendRequest,
    SpendReply,
    McpRequest,
    McpReply,
    McpHistoryRequest,
    # what the log stores besides messages in flight
    ThreadRecord,
    ContextRecord,
    LifecycleRecord,
    ApprovalRecord,
    WindowRecord,
    SystemRecord,
    McpRecord,
    ControlToolEffect,
    StoredEffect,
    HistoryEntry,
)
"""Every closed union of tagged classes (a union of one is the class itself)."""


def members(union: object) -> tuple[type, ...]:
    """The classes of a closed union such as ``Pause | Resume`` (or the one class given)."""
    if isinstance(union, types.UnionType):
        return tuple(cls for arg in get_args(union) for cls in members(arg))
    assert isinstance(union, type), f"{union!r} is neither a class nor a union of classes"
    return (union,)


TAGGED_TYPES: tuple[type, ...] = tuple(dict.fromkeys(cls for union in CHANNELS for cls in members(union)))
"""Every tagged class, once; a test checks that each ``Message`` subclass in protocol/ is here."""
