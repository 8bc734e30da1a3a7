"""What a thread's history holds and a model is shown: content at its levels of detail, tool
specs, calls and results, history entries, the chat sent to a model, and where a thread
stands (the engine's state and the task's status, both read off the history; the status
itself, :class:`~livecontext.protocol.agent.AgentStatus`, is the reply of the agent's status request),
and the approvals of its tool calls: their state and the requests that record and decide them
(the log records are in :mod:`~livecontext.protocol.records`).
"""

from __future__ import annotations

from ._content import Content, Level, LevelText, Retention, Shown
from ._tools import ToolCall, ToolContext, ToolResult, ToolSpec, ToolStatus, idempotency_key
from ._entries import (
    ENTRY_KINDS,
    HistoryEntry,
    KeyedNote,
    ModelInputEntry,
    ModelOutputEntry,
    Notification,
    RecapEntry,
    ToolResultsEntry,
    Usage,
    UsageTotals,
    id_number,
)
from ._chat import ChatMessage, ModelReply, ModelRequest, Role
from ._state import EngineState, derive_state
from ._lifecycle import (
    OUTPUT,
    TASK_ABANDON,
    TASK_COMPLETE,
    WAIT_PARENT,
    WAIT_USER_RESPONSE,
    TaskMarks,
    TaskStatus,
)
from ._approvals import (
    DENIED_REASON,
    Approval,
    ApprovalRecorded,
    ApprovalReply,
    ApprovalRequest,
    DecideApproval,
    RecordApprovalRequest,
    approval_waits,
)
from ._status import NO_MARKS, derive_status, task_after

__all__ = [
    "Approval",
    "ApprovalRecorded",
    "ApprovalReply",
    "ApprovalRequest",
    "ChatMessage",
    "DENIED_REASON",
    "DecideApproval",
    "Content",
    "ENTRY_KINDS",
    "EngineState",
    "HistoryEntry",
    "KeyedNote",
    "Level",
    "LevelText",
    "ModelInputEntry",
    "ModelOutputEntry",
    "ModelReply",
    "ModelRequest",
    "NO_MARKS",
    "Notification",
    "OUTPUT",
    "RecapEntry",
    "RecordApprovalRequest",
    "Retention",
    "Role",
    "Shown",
    "TASK_ABANDON",
    "TASK_COMPLETE",
    "TaskMarks",
    "TaskStatus",
    "ToolCall",
    "ToolContext",
    "ToolResult",
    "ToolResultsEntry",
    "ToolSpec",
    "ToolStatus",
    "Usage",
    "UsageTotals",
    "WAIT_PARENT",
    "WAIT_USER_RESPONSE",
    "approval_waits",
    "derive_state",
    "derive_status",
    "idempotency_key",
    "id_number",
    "task_after",
]
