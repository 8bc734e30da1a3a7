"""The history store: a thread's journal, its replay, and rendering under a token budget."""

from __future__ import annotations

from ._limits import BudgetLimits, HistoryLimits
from ._log import load_state, replay_app_effects, write_snapshot
from ._render import BudgetTooSmallError, RenderResult, render
from ._stable import POLICIES, ContextPolicy, StableRenderer
from ._state import HistoryState, ReplayError
from ._store import CAPABILITY_OF, HistoryConflictError, HistoryStore, history_topic, plan_state, render_state, restore_frame
from ._units import RenderCache

__all__ = [
    "CAPABILITY_OF",
    "POLICIES",
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
]
