"""The history store: a thread's journal, its replay, and rendering under a token budget."""

from __future__ import annotations

from ._limits import BudgetLimits, HistoryLimits
from ._lod import result_content, tools_tokens
from ._log import load_state, replay_app_effects, write_snapshot
from ._render import RECAP_PREFIX, RECAP_PREFIX_TOKENS, BudgetTooSmallError, RenderResult, render
from ._stable import POLICIES, ContextPolicy, StableRenderer
from ._state import HistoryState, ReplayError
from ._store import CAPABILITY_OF, HistoryConflictError, HistoryStore, history_topic, plan_state, render_state, restore_frame
from ._text import (
    cut_at_boundary,
    error_line,
    error_place,
    first_meaningful_line,
    first_sentence,
    meaningful,
    questions,
    test_outcome,
)
from ._units import RenderCache, answers, unit_messages

__all__ = [
    "CAPABILITY_OF",
    "POLICIES",
    "RECAP_PREFIX",
    "RECAP_PREFIX_TOKENS",
    "BudgetLimits",
    "HistoryLimits",
    "BudgetTooSmallError",
    "ContextPolicy",
    "StableRenderer",
    "ReplayError",
    "HistoryConflictError",
    "HistoryState",
    "HistoryStore",
    "RenderCache",
    "RenderResult",
    "history_topic",
    "load_state",
    "render",
    "plan_state",
    "render_state",
    "restore_frame",
    "replay_app_effects",
    "write_snapshot",
    # the text of an entry at each level of detail, shared with the recap, the engine and the trace
    "answers",
    "cut_at_boundary",
    "error_line",
    "error_place",
    "first_meaningful_line",
    "first_sentence",
    "meaningful",
    "questions",
    "result_content",
    "test_outcome",
    "tools_tokens",
    "unit_messages",
]
