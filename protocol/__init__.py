"""Pure data: ids, envelopes, messages, history entries, levels of detail, tool specs.

No I/O and no trio here: everything in this package can be built, compared and serialized
(through :func:`make_converter`) without a running runtime.
"""

from __future__ import annotations

from ._apps import NotebookEdited
from ._catalog import TAGGED_TYPES
from ._chat import ChatMessage, ModelReply, ModelRequest, Role
from ._content import Content, Level, LevelText, Retention
from ._converter import (
    SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    ProtocolConverter,
    check_schema_version,
    make_converter,
)
from ._entries import (
    ENTRY_KINDS,
    HistoryEntry,
    ModelInputEntry,
    ModelOutputEntry,
    Notification,
    RecapEntry,
    ToolResultsEntry,
    Usage,
)
from ._envelope import Envelope
from ._errors import (
    MalformedDataError,
    ProtocolError,
    UnknownMessageTypeError,
    UnsupportedSchemaVersionError,
)
from ._ids import ActorId, Topic, format_message_id, message_id_time_ns
from ._kernel import Ack, ActorEscalated, ActorRestarted, ErrorReply
from ._message import Message
from ._tools import ToolCall, ToolResult, ToolSpec, ToolStatus

__all__ = [
    "Ack",
    "ENTRY_KINDS",
    "SCHEMA_VERSION",
    "SUPPORTED_SCHEMA_VERSIONS",
    "TAGGED_TYPES",
    "ActorEscalated",
    "ActorId",
    "ChatMessage",
    "ModelReply",
    "ModelRequest",
    "Role",
    "ActorRestarted",
    "Content",
    "Envelope",
    "ErrorReply",
    "HistoryEntry",
    "Level",
    "LevelText",
    "MalformedDataError",
    "Message",
    "ModelInputEntry",
    "ModelOutputEntry",
    "NotebookEdited",
    "Notification",
    "ProtocolConverter",
    "ProtocolError",
    "RecapEntry",
    "Retention",
    "ToolCall",
    "ToolResult",
    "ToolResultsEntry",
    "ToolSpec",
    "ToolStatus",
    "Topic",
    "UnknownMessageTypeError",
    "UnsupportedSchemaVersionError",
    "Usage",
    "check_schema_version",
    "format_message_id",
    "make_converter",
    "message_id_time_ns",
]
