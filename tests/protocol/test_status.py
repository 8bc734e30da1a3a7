"""The status read off a thread's state and marks: ``waiting_internal`` while the call the engine
runs waits on another agent."""

from __future__ import annotations

import datetime as dt

import pytest

from livecontext.protocol.agent import AgentStatus
from livecontext.protocol.history import (
    NO_MARKS,
    Approval,
    EngineState,
    Retention,
    TaskMarks,
    TaskStatus,
    ToolCall,
    ToolResultsEntry,
    derive_status,
    task_after,
)
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.records import EnginePaused, ToolResultsAppended, ToolStarted

from tests.support.agent_harness import counter


@pytest.mark.parametrize("tool", ["spawn_subagent", "delegate"])
def test_a_pending_call_that_waits_on_another_agent_gives_waiting_internal_naming_it(tool: str) -> None:
    pending = ToolCall("c7", tool, "{}")
    assert derive_status(EngineState.WAITING_TOOL_RESULTS, NO_MARKS, pending, pending_waits=True) == AgentStatus(
        TaskStatus.WAITING_INTERNAL, waiting_on=f"{tool} call c7")


def test_a_pending_ordinary_call_is_active_whatever_its_name_and_a_pause_or_failure_wins_over_waiting_internal() -> None:
    ask = ToolCall("c1", "ask_agent", "{}")
    assert derive_status(EngineState.WAITING_TOOL_RESULTS, NO_MARKS, ask).status is TaskStatus.ACTIVE
    assert derive_status(EngineState.WAITING_TOOL_RESULTS, TaskMarks(paused=True), ask, True).status \
        is TaskStatus.PAUSED
    assert derive_status(EngineState.WAITING_TOOL_RESULTS, TaskMarks(failure="boom"), ask, True).status \
        is TaskStatus.FAILED


# -- the fold: what each record does to the marks ----------------------------------------------

CALL = ToolCall("c1", "pay", "{}")
WAITING = (Approval(CALL),)
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def results_appended() -> ToolResultsAppended:
    note = counter().content("", "", "")
    return ToolResultsAppended(ToolResultsEntry(id="e3", revision=1, author=ActorId("engine", "t"), created_at=T0,
                                                retention=Retention.COMPRESSIBLE, content=note))


@pytest.mark.parametrize("stopped", [TaskMarks(paused=True, approvals=WAITING),
                                     TaskMarks(failure="boom", approvals=WAITING)])
def test_a_step_after_a_pause_or_a_failure_clears_it_and_keeps_the_outputs_approvals(stopped: TaskMarks) -> None:
    assert task_after(stopped, ToolStarted("c1", "pay")) == TaskMarks(approvals=WAITING)


def test_a_step_with_nothing_to_clear_leaves_the_marks_as_they_are() -> None:
    marks = TaskMarks(approvals=WAITING)
    assert task_after(marks, ToolStarted("c1", "pay")) is marks


@pytest.mark.parametrize("marks", [TaskMarks(approvals=WAITING), TaskMarks(paused=True), TaskMarks(failure="boom")])
def test_a_new_entry_ends_the_outputs_approvals_and_clears_a_pause_or_a_failure(marks: TaskMarks) -> None:
    assert task_after(marks, results_appended()) == NO_MARKS


def test_a_new_entry_with_nothing_to_clear_leaves_the_marks_as_they_are() -> None:
    assert task_after(NO_MARKS, results_appended()) is NO_MARKS


def test_only_the_call_the_engine_runs_next_makes_the_status_waiting_approval() -> None:
    waiting = (Approval(ToolCall("c2", "pay", "{}")),)  # (c1, the next to run, needs none)
    marks = TaskMarks(approvals=waiting)
    assert derive_status(EngineState.WAITING_TOOL_RESULTS, marks, ToolCall("c1", "add", "{}")).status \
        is TaskStatus.ACTIVE
    same_id = "".join(["c", "2"])  # (equal to the approval's call id, not the same string object)
    assert derive_status(EngineState.WAITING_TOOL_RESULTS, marks, ToolCall(same_id, "pay", "{}")).status \
        is TaskStatus.WAITING_APPROVAL
    later = TaskMarks(approvals=(Approval(CALL),))  # (c1 waits; the engine runs c2 first)
    assert derive_status(EngineState.WAITING_TOOL_RESULTS, later, ToolCall("c2", "add", "{}")).status \
        is TaskStatus.ACTIVE


def test_a_pause_record_marks_the_task_paused_with_its_reason() -> None:
    assert task_after(NO_MARKS, EnginePaused("max_cost 1.00 reached")) == TaskMarks(
        paused=True, pause_reason="max_cost 1.00 reached")
