"""Pure data: ids, envelopes, messages, history entries, levels of detail, tool specs.

No I/O and no trio here: everything in this package can be built, compared and serialized
(through :func:`make_converter`) without a running runtime.
"""

from __future__ import annotations

from . import _agent, _apps, _context_mgmt, _entries, _kernel, _lifecycle, _records, _setup, _spend, _system, _windows
from ._agent import *  # noqa: F403  (the module's __all__)
from ._apps import *  # noqa: F403  (the module's __all__)
from ._windows import *  # noqa: F403  (the module's __all__)
from ._context_mgmt import *  # noqa: F403  (the module's __all__)
from ._entries import *  # noqa: F403  (the module's __all__)
from ._kernel import *  # noqa: F403  (the module's __all__)
from ._lifecycle import *  # noqa: F403  (the module's __all__)
from ._records import *  # noqa: F403  (the module's __all__)
from ._setup import *  # noqa: F403  (the module's __all__)
from ._spend import *  # noqa: F403  (the module's __all__)
from ._system import *  # noqa: F403  (the module's __all__)
from ._catalog import CHANNELS, TAGGED_TYPES, members
from ._chat import ChatMessage, ModelReply, ModelRequest, Role
from ._content import Content, Level, LevelText, Retention, Shown
from ._converter import (
    SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    ProtocolConverter,
    check_schema_version,
    make_converter,
)
from ._envelope import Envelope
from ._errors import (
    LivecontextError,
    MalformedDataError,
    ProtocolError,
    UnknownMessageTypeError,
    UnsupportedSchemaVersionError,
)
from ._state import EngineState, derive_state
from ._status import NO_MARKS, derive_status, task_after
from ._ids import (
    MAX_THREAD_ID,
    SUB_MARK,
    ActorId,
    Topic,
    format_message_id,
    message_id_template,
    message_id_time_ns,
    thread_id_problem,
)
from ._json import dump_json, dump_standard_json, load_json
from ._message import Message, type_source
from ._registry import MessageTypeClashError, register_message_types, registered_type
from ._tools import ToolCall, ToolResult, ToolSpec, ToolStatus
from ._utc import utc_iso_text

__all__ = [
    "ActorId",
    "CHANNELS",
    "ChatMessage",
    "Content",
    "EngineState",
    "Envelope",
    "Level",
    "LivecontextError",
    "LevelText",
    "MAX_THREAD_ID",
    "MalformedDataError",
    "Message",
    "MessageTypeClashError",
    "ModelReply",
    "ModelRequest",
    "NO_MARKS",
    "ProtocolConverter",
    "ProtocolError",
    "Retention",
    "Role",
    "SCHEMA_VERSION",
    "SUB_MARK",
    "SUPPORTED_SCHEMA_VERSIONS",
    "Shown",
    "TAGGED_TYPES",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "ToolStatus",
    "Topic",
    "UnknownMessageTypeError",
    "UnsupportedSchemaVersionError",
    "check_schema_version",
    "derive_state",
    "derive_status",
    "dump_json",
    "dump_standard_json",
    "format_message_id",
    "load_json",
    "make_converter",
    "members",
    "message_id_template",
    "message_id_time_ns",
    "register_message_types",
    "registered_type",
    "task_after",
    "thread_id_problem",
    "type_source",
    "utc_iso_text",
]
__all__ += _agent.__all__
__all__ += _apps.__all__
__all__ += _context_mgmt.__all__
__all__ += _entries.__all__
__all__ += _kernel.__all__
__all__ += _lifecycle.__all__
__all__ += _records.__all__
__all__ += _setup.__all__
__all__ += _spend.__all__
__all__ += _system.__all__
__all__ += _windows.__all__
