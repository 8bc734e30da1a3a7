"""A thread's limits (DESIGN.md, "Limits"): how full its unfolded history is, and what the
store drops at the truncate threshold. Plain values and functions of a :class:`HistoryState`."""

from __future__ import annotations

from attrs import frozen

from livecontext.protocol.context import HistoryEdited, LimitLevel
from livecontext.protocol.history import HistoryEntry, ModelOutputEntry, Retention, ToolResultsEntry
from livecontext.runtime import UsageError

from ._edits import unit_conflicts
from ._state import HistoryState, entry_bytes, entry_tokens


@frozen
class HistoryLimits:
    """Limits of a thread's unfolded history, and the thresholds, as fractions of each limit.

    At ``soft`` a recap is suggested, at ``hard`` it is due now, at ``truncate`` the store
    drops the oldest DISPOSABLE entries and the engine has the recap maintainer fold before
    its next model call.
    """

    max_entries: int | None = None
    max_tokens: int | None = None
    max_bytes: int | None = None
    soft: float = 0.6
    hard: float = 0.8
    truncate: float = 1.0

    def __attrs_post_init__(self) -> None:
        for name in ("max_entries", "max_tokens", "max_bytes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UsageError(f"limits.{name} must be >= 1, got {value}")
        if not 0 < self.soft <= self.hard <= self.truncate:
            raise UsageError(
                f"limit thresholds must satisfy 0 < soft <= hard <= truncate, got "
                f"soft={self.soft}, hard={self.hard}, truncate={self.truncate}"
            )

    @property
    def unlimited(self) -> bool:
        """Whether no limit is set (the default): then nothing can be full."""
        return self.max_entries is None and self.max_tokens is None and self.max_bytes is None

    def fraction(self, entries: int, tokens: int, size: int) -> float:
        """How full the history is: the largest of the three ratios."""
        full = 0.0
        if self.max_entries:
            full = max(full, entries / self.max_entries)
        if self.max_tokens:
            full = max(full, tokens / self.max_tokens)
        if self.max_bytes:
            full = max(full, size / self.max_bytes)
        return full

    def level(self, entries: int, tokens: int, size: int) -> LimitLevel:
        """The threshold crossed by this usage."""
        f = self.fraction(entries, tokens, size)
        if f >= self.truncate:
            return LimitLevel.TRUNCATE
        if f >= self.hard:
            return LimitLevel.HARD
        if f >= self.soft:
            return LimitLevel.SOFT
        return LimitLevel.OK

    def level_of(self, state: HistoryState) -> LimitLevel:
        """The threshold the unfolded entries of ``state`` cross."""
        if self.unlimited:
            return LimitLevel.OK  # (asked at every step: skip the arithmetic)
        return self.level(len(state.active), state.active_tokens, state.active_bytes)


@frozen
class BudgetLimits:
    """Limits derived from the token budget: what a recap without ``[limits]`` folds by.

    The unfolded entries may cost (at RECENT) ``max_tokens = budget - system prompt - tools -
    reserved`` (``reserved``: room kept for the recap itself); :meth:`resolve` makes the
    :class:`HistoryLimits` once the thread's prompt and tools are known. The thresholds keep
    the unfolded history near the room the budget leaves, so that once the history is longer
    than the budget the rendered context stays close to full (the latest observation at LIVE
    and older units at GIST take up the rest) while the recap stands for everything older.
    """

    budget: int
    reserved: int = 0
    soft: float = 0.8
    hard: float = 0.9
    truncate: float = 1.0

    def resolve(self, fixed_tokens: int) -> HistoryLimits:
        """The limits for a thread whose system prompt and tools cost ``fixed_tokens``."""
        room = max(self.budget - self.reserved - fixed_tokens, 1)
        return HistoryLimits(max_tokens=room, soft=self.soft, hard=self.hard, truncate=self.truncate)


def truncation(state: HistoryState, limits: HistoryLimits) -> HistoryEdited | None:
    """The edit dropping DISPOSABLE entries, if the truncate threshold is crossed and there
    are some to drop."""
    if limits.level_of(state) is not LimitLevel.TRUNCATE:
        return None
    drop = disposable_to_drop(state, limits)
    return HistoryEdited((), tuple(drop)) if drop else None


def disposable_to_drop(state: HistoryState, limits: HistoryLimits) -> list[str]:
    """The oldest DISPOSABLE entries whose removal brings the history under its hard limit.

    A model output and its tool results go together (both DISPOSABLE) or not at all; the
    newest entry stays (the engine's state stands on it).
    """
    if Retention.DISPOSABLE not in {e.retention for e in state.active}:
        return []  # the common case, checked at every append past the threshold: keep it cheap
    newest = state.last
    entries, tokens, size = len(state.active), state.active_tokens, state.active_bytes
    drop: list[str] = []
    units: list[list[HistoryEntry]] = []
    for entry in state.active:  # group into steps: an output with the results after it
        if isinstance(entry, ToolResultsEntry) and units and isinstance(units[-1][-1], ModelOutputEntry):
            units[-1].append(entry)
        else:
            units.append([entry])
    for unit in units:
        if any(e.retention is not Retention.DISPOSABLE or (newest is not None and e.id == newest.id)
               for e in unit):
            continue
        if unit_conflicts(state, {e.id for e in unit} | set(drop)):
            continue
        drop += [e.id for e in unit]
        entries -= len(unit)
        tokens -= sum(entry_tokens(e) for e in unit)
        size -= sum(entry_bytes(e) for e in unit)
        if limits.level(entries, tokens, size) not in (LimitLevel.HARD, LimitLevel.TRUNCATE):
            break
    return drop

