"""The engine's five states, derived from the history's tail (seed note 002)."""

from __future__ import annotations

import enum

from ._entries import HistoryEntry, ModelInputEntry, ModelOutputEntry, ToolResultsEntry


class EngineState(enum.Enum):
    """Where an agent thread stands; a pure function of its history's tail."""

    WAITING_INPUT = "WaitingInput"
    """The last entry is a model output with no tool calls, or the tool-results entry of a
    control tool that ended the turn (``task_complete``, ``wait_user_response``), or the
    history is empty."""
    PENDING_INPUT = "PendingInput"
    """The last entry is a model input: the next step calls the model."""
    WAITING_TOOL_RESULTS = "WaitingToolResults"
    """The last model output has more tool calls than recorded results."""
    TOOL_RESULTS_READY = "ToolResultsReady"
    """Every tool call of the last model output has a recorded result."""
    PENDING_TOOL_RESULTS = "PendingToolResults"
    """The last entry is a tool-results entry (of no control tool that ended the turn): the
    next step calls the model."""


def derive_state(last: HistoryEntry | None, recorded_results: int, task_ended: bool = False,
                 terminated: bool = False) -> EngineState:
    """The state for the last (non-recap) entry and the number of recorded tool results.

    Args:
        last: the newest entry that is not a recap, or ``None`` for an empty history.
        recorded_results: tool results recorded for ``last``'s calls, not yet in an entry.
        task_ended: a control tool (``task_complete``, ``wait_user_response``) ended the
            task's turn since the last input: its tool-results entry waits for input.
        terminated: a ``terminate`` input ended the task since the last input: the thread
            waits for input whatever its last entry (an input whose model call was cut, or
            the results of a step whose calls were cut or not run).
    """
    if last is None or terminated:
        return EngineState.WAITING_INPUT
    if isinstance(last, ModelInputEntry):
        return EngineState.PENDING_INPUT
    if isinstance(last, ToolResultsEntry):
        return EngineState.WAITING_INPUT if task_ended else EngineState.PENDING_TOOL_RESULTS
    if isinstance(last, ModelOutputEntry):
        if not last.tool_calls:
            return EngineState.WAITING_INPUT
        if recorded_results < len(last.tool_calls):
            return EngineState.WAITING_TOOL_RESULTS
        return EngineState.TOOL_RESULTS_READY
    raise TypeError(f"derive_state got a {type(last).__name__}; pass the last non-recap entry")
