"""The status read off a thread's state and marks: ``waiting_internal`` while the call the engine
runs waits on another agent."""

from __future__ import annotations

import pytest

from livecontext.protocol.agent import AgentStatus
from livecontext.protocol.history import NO_MARKS, EngineState, TaskMarks, TaskStatus, ToolCall, derive_status


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
