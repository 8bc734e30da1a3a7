"""The history store: a thread's journal, its fold, and rendering under a token budget."""

from __future__ import annotations

from ._manage import CAPABILITY_OF, BudgetLimits, ContextManagement, HistoryLimits
from ._render import BudgetTooSmallError, RenderResult, render
from ._units import RenderCache
from ._state import ReplayError, HistoryState
from ._store import (
    HistoryConflictError,
    HistoryStore,
    history_topic,
    load_state,
    render_state,
    replay_app_effects,
    write_snapshot,
)

__all__ = [
    "CAPABILITY_OF",
    "BudgetLimits",
    "ContextManagement",
    "HistoryLimits",
    "BudgetTooSmallError",
    "ReplayError",
    "HistoryConflictError",
    "HistoryState",
    "HistoryStore",
    "RenderCache",
    "RenderResult",
    "history_topic",
    "load_state",
    "render",
    "render_state",
    "replay_app_effects",
    "write_snapshot",
]
