"""What a thread's event log stores: one record per accepted state change (entries appended,
tool results, configuration, snapshots), the settings a thread runs with, the apps' effects
and windows, the marks of its task's lifecycle, and the approvals of its tool calls.
"""

from __future__ import annotations

from ._records import (
    AppInfo,
    ContextCompacted,
    EntryAppended,
    HistorySnapshot,
    RenderPolicy,
    SystemPromptSet,
    ThreadConfigured,
    ThreadRecord,
    ToolResultRecorded,
    ToolResultsAppended,
    ToolStarted,
)
from ._setup import (
    RecordedAnalyzer,
    RecordedLimits,
    RecordedPrice,
    RecordedRecap,
    RecordedSpend,
    ThreadSettings,
)
from ._apps import AppEffect, AppHistory, NotebookEdited, StoredEffect, UndecodedEffect, app_effect_of
from ._windows import (
    WHOLE_EVERY,
    AppWindow,
    AppWindowChange,
    AppWindowsChanged,
    AppWindowsRecorded,
    TextChange,
    WindowRecord,
)
from ._approvals import ApprovalDecided, ApprovalRecord, ApprovalRequested
from ._dispatch import DispatchRecord, StepInterrupted, TaskTerminated
from ._lifecycle import (
    ControlToolEffect,
    EnginePaused,
    LifecycleRecord,
    ParentAwaited,
    StepFailed,
    TaskAbandoned,
    TaskCompleted,
    UserQuestionAsked,
)

__all__ = [
    "DispatchRecord",
    "StepInterrupted",
    "TaskTerminated",
    "AppEffect",
    "ApprovalDecided",
    "ApprovalRecord",
    "ApprovalRequested",
    "AppHistory",
    "AppInfo",
    "AppWindow",
    "AppWindowChange",
    "AppWindowsChanged",
    "AppWindowsRecorded",
    "ContextCompacted",
    "ControlToolEffect",
    "EnginePaused",
    "EntryAppended",
    "HistorySnapshot",
    "LifecycleRecord",
    "NotebookEdited",
    "ParentAwaited",
    "RecordedAnalyzer",
    "RecordedLimits",
    "RecordedPrice",
    "RecordedRecap",
    "RecordedSpend",
    "RenderPolicy",
    "StepFailed",
    "StoredEffect",
    "SystemPromptSet",
    "TaskAbandoned",
    "TaskCompleted",
    "TextChange",
    "ThreadConfigured",
    "ThreadRecord",
    "ThreadSettings",
    "ToolResultRecorded",
    "ToolResultsAppended",
    "ToolStarted",
    "UndecodedEffect",
    "UserQuestionAsked",
    "WHOLE_EVERY",
    "WindowRecord",
    "app_effect_of",
]
