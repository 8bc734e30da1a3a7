"""The fold of a task's lifecycle marks over a thread's log, and the status read off it.

See :mod:`._lifecycle` for what the statuses mean.
"""

from __future__ import annotations

import attrs

from ._approvals import Approval, ApprovalDecided, ApprovalRequested, approval_waits
from ._entries import ModelInputEntry
from ._tools import ToolCall
from ._lifecycle import (
    AgentStatus,
    ControlToolEffect,
    EnginePaused,
    ParentAwaited,
    StepFailed,
    TaskAbandoned,
    TaskCompleted,
    TaskMarks,
    TaskStatus,
    UserQuestionAsked,
)
from ._dispatch import TaskTerminated
from ._message import Message
from ._records import EntryAppended, ToolResultRecorded, ToolResultsAppended, ToolStarted
from ._state import EngineState

NO_MARKS = TaskMarks()
"""A task nothing has happened to (a new thread's)."""


def task_after(marks: TaskMarks, payload: Message) -> TaskMarks:
    """The marks after the log record ``payload``: an input starts a new turn (clearing
    everything), any other step clears a pause and a failure, the control tools' effects end
    the turn, :class:`EnginePaused` and :class:`StepFailed` mark the stop, :class:`TaskTerminated`
    ends the task; approvals hold for the current output's calls (a new entry clears them)."""
    if isinstance(payload, EntryAppended):
        return NO_MARKS if isinstance(payload.entry, ModelInputEntry) else _next_entry(marks)
    if isinstance(payload, ToolResultRecorded):
        effect = payload.effect
        if isinstance(effect, ControlToolEffect):
            return TaskMarks(ended=effect, approvals=marks.approvals)
        return _stepped(marks)
    if isinstance(payload, ToolResultsAppended):
        return _next_entry(marks)
    if isinstance(payload, ToolStarted):
        return _stepped(marks)
    if isinstance(payload, ApprovalRequested | ApprovalDecided):
        return attrs.evolve(_stepped(marks), approvals=_approvals_after(marks.approvals, payload))
    if isinstance(payload, EnginePaused):
        return attrs.evolve(marks, paused=True, pause_reason=payload.reason)
    if isinstance(payload, StepFailed):
        return attrs.evolve(marks, failure=payload.error)
    if isinstance(payload, TaskTerminated):
        return TaskMarks(ended=payload)
    return marks


def _next_entry(marks: TaskMarks) -> TaskMarks:
    """After a new entry: a step (see :func:`_stepped`) that also ends the output's approvals."""
    if marks.approvals or marks.paused or marks.failure is not None:
        return TaskMarks(ended=marks.ended)
    return marks


def _stepped(marks: TaskMarks) -> TaskMarks:
    if marks.paused or marks.failure is not None:
        return TaskMarks(ended=marks.ended, approvals=marks.approvals)
    return marks


def derive_status(state: EngineState, marks: TaskMarks, pending: ToolCall | None = None,
                  pending_waits: bool = False) -> AgentStatus:
    """The status of a thread in ``state`` with ``marks`` (see :mod:`._lifecycle`); ``pending``
    is the tool call the engine runs next, if it is waiting on tool results, and
    ``pending_waits`` whether that call waits on another agent's work (its tool's
    :attr:`~._tools.ToolSpec.waits_on_agent`: the status is then ``waiting_internal``). A call
    waiting for a person's approval is a wait of that kind too, with a status of its own:
    ``waiting_approval``."""
    if marks.failure is not None:
        return AgentStatus(TaskStatus.FAILED, error=marks.failure)
    if state is not EngineState.WAITING_INPUT:
        if (state is EngineState.WAITING_TOOL_RESULTS and pending is not None and marks.approvals
                and any(a.call.id == pending.id and a.pending for a in marks.approvals)):
            # (before a pause: the engine can do nothing until a person decides)
            return AgentStatus(TaskStatus.WAITING_APPROVAL, waiting_on=approval_waits(marks.approvals),
                               approvals=tuple(a.call for a in marks.approvals if a.pending))
        if marks.paused:
            return AgentStatus(TaskStatus.PAUSED, reason=marks.pause_reason)
        if state is EngineState.WAITING_TOOL_RESULTS and pending is not None and pending_waits:
            return AgentStatus(TaskStatus.WAITING_INTERNAL, waiting_on=f"{pending.name} call {pending.id}")
        return AgentStatus(TaskStatus.ACTIVE)
    ended = marks.ended
    if isinstance(ended, TaskTerminated):
        return AgentStatus(TaskStatus.TERMINATED, reason=ended.reason, by=ended.by)
    if isinstance(ended, TaskCompleted):
        return AgentStatus(TaskStatus.COMPLETED, result=ended.result)
    if isinstance(ended, TaskAbandoned):
        return AgentStatus(TaskStatus.ABANDONED, reason=ended.reason)
    if isinstance(ended, ParentAwaited):
        return AgentStatus(TaskStatus.WAITING_PARENT, question=ended.message)
    if isinstance(ended, UserQuestionAsked):
        return AgentStatus(TaskStatus.WAITING_USER, question=ended.question)
    return AgentStatus(TaskStatus.WAITING_USER)


def _approvals_after(approvals: tuple[Approval, ...], payload: ApprovalRequested | ApprovalDecided) -> tuple[Approval, ...]:
    """The approvals of the current output after the log record ``payload``."""
    if isinstance(payload, ApprovalRequested):
        known = {a.call.id for a in approvals}
        return approvals + tuple(Approval(call) for call in payload.calls if call.id not in known)
    return tuple(Approval(a.call, payload) if a.call.id == payload.call_id else a for a in approvals)
