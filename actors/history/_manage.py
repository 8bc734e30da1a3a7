"""Context management in the history store: permissions, reflection, CAS edits, folds, limits.

:class:`ContextManagement` is mixed into :class:`HistoryStore`; it keeps the edit rules in
one place: every edit names the entries and the revisions it expects, and is refused whole
(:class:`EditConflict`) if any changed, if it would split a model output from its tool
results, fold a CRITICAL entry or part of a run of BATCH_COMPRESSIBLE entries, or touch the
newest entry (the engine's state stands on it).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from attrs import frozen

from livecontext.protocol import (
    AccessDenied,
    AppendInput,
    AppendOutput,
    AppendToolResults,
    Capability,
    Conflict,
    EditApplied,
    EditConflict,
    EditHistory,
    EntriesFolded,
    EntryRef,
    ENTRY_KINDS,
    GetAppEffects,
    GetStatus,
    GetTail,
    HistoryEdited,
    HistoryEntry,
    HistorySlice,
    HistoryUsage,
    LevelText,
    LimitLevel,
    MarkFolded,
    Message,
    ModelOutputEntry,
    PostNotification,
    ReadEntries,
    ReadHistory,
    RecapEntry,
    RecordPause,
    RecordStepFailure,
    RecordToolResult,
    RecordToolStarted,
    RemoveEntries,
    Render,
    ReplayAppEffects,
    ReplaceContent,
    Retention,
    SaveAppState,
    SetRetention,
    ToolResultsEntry,
    FoldIntoRecap,
    id_number,
)
from livecontext.runtime import Actor, UsageError, handler

from ._state import HistoryState

# Enum members bound once: in Python 3.11 every attribute lookup on an Enum class takes
# the slow path EnumType.__getattr__ forces (~75 ns against ~15), and these are read at every step.
CAPABILITY_OF: dict[type, Capability] = {
    GetTail: Capability.READ,
    ReadEntries: Capability.READ,
    ReadHistory: Capability.READ,
    Render: Capability.READ,
    GetAppEffects: Capability.READ,
    GetStatus: Capability.READ,
    ReplayAppEffects: Capability.READ,
    SaveAppState: Capability.APP_STATE,
    AppendInput: Capability.APPEND,
    AppendOutput: Capability.APPEND,
    RecordToolStarted: Capability.APPEND,
    RecordToolResult: Capability.APPEND,
    AppendToolResults: Capability.APPEND,
    RecordPause: Capability.APPEND,
    RecordStepFailure: Capability.APPEND,
    PostNotification: Capability.NOTIFY,
    EditHistory: Capability.EDIT,
    FoldIntoRecap: Capability.FOLD,
}
"""What a sender needs for each request to the history store."""


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


entry_number = id_number
"""The number in an entry id (``e12`` -> 12): ids are given in increasing order."""


def matches(entry: HistoryEntry, msg: ReadHistory) -> bool:
    """Whether ``entry`` passes the id, kind, time and fold filters of ``msg``.

    Id bounds compare id numbers, so a bound naming an entry since removed still works.
    """
    if not msg.include_folded and entry.folded:
        return False
    if msg.kinds and ENTRY_KINDS[type(entry)] not in msg.kinds:
        return False
    if msg.start_id is not None and entry_number(entry.id) < entry_number(msg.start_id):
        return False
    if msg.end_id is not None and entry_number(entry.id) > entry_number(msg.end_id):
        return False
    if msg.since is not None and entry.created_at < msg.since:
        return False
    return not (msg.until is not None and entry.created_at > msg.until)


class ContextManagement(Actor):
    """Handlers for reflection, edits and folds; mixed into the history store."""

    state: HistoryState
    limits: HistoryLimits
    thread_id: str
    published_level: LimitLevel = LimitLevel.OK
    """The level of the last :class:`HistoryUsage` published (a drop to OK is published once)."""

    def _commit_now(self, payloads: list[Message], *, own: bool = False) -> None:  # provided by HistoryStore
        raise NotImplementedError

    async def _commit(self, payloads: list[Message], *, own: bool = False) -> None:  # provided by HistoryStore
        raise NotImplementedError

    def capability_for(self, message_type: type) -> Capability | None:
        return CAPABILITY_OF.get(message_type)

    async def on_denied(self, message: Message, capability: object) -> Message:
        env = self.ctx.current
        assert env is not None and isinstance(capability, Capability)
        denied = AccessDenied(env.sender, capability, type(message).__name__)
        # the attempt is audited in the log (the denial names who tried); nothing changes.
        # The record is the store's: it decided the denial
        await self._commit([denied], own=True)
        return denied

    # -- reflection -----------------------------------------------------------------------------

    @handler(inline=True)
    def on_read_history(self, msg: ReadHistory) -> HistorySlice:
        s = self.state
        start = msg.start if msg.start is not None else 0
        stop = msg.stop if msg.stop is not None else len(s.entries)
        out = []
        if msg.include_folded or msg.start is not None or msg.stop is not None:
            positions: Sequence[int] = range(max(start, 0), min(stop, len(s.entries)))
        else:  # only unfolded entries: walk those, not the whole (mostly folded) history
            positions = sorted(s.pos[e.id] for e in (*s.recaps, *s.active))
        for i in positions:
            entry = s.entries[i]
            if matches(entry, msg):
                out.append(entry)
                if msg.limit is not None and len(out) >= msg.limit:
                    break
        return HistorySlice(tuple(out), len(s.entries), s.active_tokens, s.seq)

    # -- edits ------------------------------------------------------------------------------------

    def _check(self, refs: tuple[EntryRef, ...] | list[EntryRef], *,
               newest_ok: frozenset[str] = frozenset()) -> list[Conflict]:
        """Conflicts of ``refs``: missing, stale, or the newest entry (unless its id is in
        ``newest_ok``: an edit that keeps it where it is)."""
        conflicts = []
        newest = self.state.last
        for ref in refs:
            entry = self.state.entry(ref.id)
            if entry is None:
                conflicts.append(Conflict(ref.id, ref.revision, None, "no such entry"))
            elif entry.revision != ref.revision:
                conflicts.append(Conflict(ref.id, ref.revision, entry.revision))
            elif newest is not None and entry.id == newest.id and entry.id not in newest_ok:
                conflicts.append(Conflict(ref.id, ref.revision, entry.revision,
                                          "the newest entry cannot be edited away: the engine's state stands on it"))
        return conflicts

    def _unit_conflicts(self, ids: set[str]) -> list[Conflict]:
        """Conflicts for ids that would split a model output from its tool results."""
        out = []
        entries = self.state.entries
        for entry_id in sorted(ids, key=entry_number):
            at = self.state.pos[entry_id]
            entry = entries[at]
            partner: HistoryEntry | None = None
            if isinstance(entry, ModelOutputEntry) and entry.tool_calls:
                partner = _neighbour(entries, at, +1)
            elif isinstance(entry, ToolResultsEntry):
                partner = _neighbour(entries, at, -1)
            if partner is not None and partner.id not in ids and not partner.folded:
                out.append(Conflict(entry.id, entry.revision, entry.revision,
                                    f"would split a model output from its tool results ({partner.id} not included)"))
        return out

    @handler
    async def on_edit_history(self, msg: EditHistory) -> Message:
        changed: dict[str, HistoryEntry] = {}
        removed: list[str] = []
        refs: list[EntryRef] = []
        conflicts: list[Conflict] = []
        if not msg.edits:
            raise UsageError("EditHistory needs at least one edit")
        kept: set[str] = set()  # entries only given another retention class: nothing removed
        touched: set[str] = set()  # content replaced, folded or removed: not the newest
        for edit in msg.edits:
            if isinstance(edit, SetRetention):
                refs.append(edit.entry)
                kept.add(edit.entry.id)
            elif isinstance(edit, (ReplaceContent, MarkFolded)):
                refs.append(edit.entry)
                touched.add(edit.entry.id)
            elif isinstance(edit, RemoveEntries):
                refs.extend(edit.entries)
                touched.update(r.id for r in edit.entries)
            else:
                raise UsageError(f"EditHistory cannot apply {type(edit).__name__}; use ReplaceContent, "
                                 "SetRetention, MarkFolded or RemoveEntries")
        conflicts += self._check(refs, newest_ok=frozenset(kept - touched))
        if conflicts:
            return EditConflict(tuple(conflicts))
        for edit in msg.edits:
            if isinstance(edit, RemoveEntries):
                for ref in edit.entries:
                    entry = self.state.entry(ref.id)
                    assert entry is not None
                    if entry.retention is not Retention.DISPOSABLE:
                        conflicts.append(Conflict(ref.id, ref.revision, entry.revision,
                                                  f"only DISPOSABLE entries can be removed; it is {entry.retention.value}"))
                    removed.append(ref.id)
                continue
            assert isinstance(edit, (ReplaceContent, SetRetention, MarkFolded))  # (checked above)
            entry = changed.get(edit.entry.id) or self.state.entry(edit.entry.id)
            assert entry is not None
            if isinstance(edit, ReplaceContent):
                tokens = self.counter.count(edit.text)  # type: ignore[attr-defined]
                if isinstance(entry, ModelOutputEntry):  # an output's counts include its calls
                    tokens += entry.content.live.tokens - self.counter.count(entry.content.live.text)  # type: ignore[attr-defined]
                text = LevelText(edit.text, tokens)
                content = attrs.evolve(entry.content, **{edit.level.value: text})
                changed[entry.id] = attrs.evolve(entry, content=content)
            elif isinstance(edit, SetRetention):
                changed[entry.id] = attrs.evolve(entry, retention=edit.retention)
            elif isinstance(edit, MarkFolded):
                if entry.retention is Retention.CRITICAL:
                    conflicts.append(Conflict(entry.id, edit.entry.revision, entry.revision, "CRITICAL entries are never folded"))
                changed[entry.id] = attrs.evolve(entry, folded=True)
        hidden = {e.id for e in changed.values() if e.folded} | set(removed)
        conflicts += self._unit_conflicts(hidden)
        if conflicts:
            return EditConflict(tuple(conflicts))
        new_versions = tuple(attrs.evolve(e, revision=e.revision + 1) for e in changed.values() if e.id not in removed)
        await self._commit([HistoryEdited(new_versions, tuple(removed))])
        return EditApplied(tuple(EntryRef(e.id, e.revision) for e in new_versions), None, self.state.seq)

    def _batch_conflicts(self, ids: set[str]) -> list[Conflict]:
        """Conflicts for a fold of ``ids`` that takes part of a run of BATCH_COMPRESSIBLE
        entries (consecutive among the unfolded entries): such a run is folded whole or not
        at all."""
        out = []
        run: list[HistoryEntry] = []
        for entry in [*self.state.active, None]:  # (None: the end closes the last run)
            if entry is not None and entry.retention is Retention.BATCH_COMPRESSIBLE:
                run.append(entry)
                continue
            inside = [e.id in ids for e in run]
            if any(inside) and not all(inside):
                left = next(e for e in run if e.id not in ids)
                out.append(Conflict(left.id, left.revision, left.revision,
                                    f"would fold part of a run of BATCH_COMPRESSIBLE entries ({run[0].id} to "
                                    f"{run[-1].id}, {left.id} left out): fold the whole run or none of it"))
            run = []
        return out

    @handler
    async def on_fold(self, msg: FoldIntoRecap) -> Message:
        if not msg.entries:
            raise UsageError("FoldIntoRecap needs at least one entry")
        refs = list(msg.entries) + ([msg.previous_recap] if msg.previous_recap else [])
        conflicts = self._check(refs)
        if conflicts:
            return EditConflict(tuple(conflicts))
        ids = [r.id for r in msg.entries]
        active_ids = [e.id for e in self.state.active]
        try:
            first = active_ids.index(ids[0])
        except ValueError:
            return EditConflict((Conflict(ids[0], msg.entries[0].revision, msg.entries[0].revision,
                                          "already folded or not foldable"),))
        if active_ids[first:first + len(ids)] != ids:
            return EditConflict((Conflict(ids[0], msg.entries[0].revision, msg.entries[0].revision,
                                          "the entries are not contiguous among the unfolded entries"),))
        for ref in msg.entries:
            entry = self.state.entry(ref.id)
            assert entry is not None
            if entry.retention is Retention.CRITICAL:
                conflicts.append(Conflict(ref.id, ref.revision, entry.revision, "CRITICAL entries are never folded"))
        conflicts += self._unit_conflicts(set(ids))
        conflicts += self._batch_conflicts(set(ids))
        previous = self.state.entry(msg.previous_recap.id) if msg.previous_recap else None
        if previous is not None and not isinstance(previous, RecapEntry):
            conflicts.append(Conflict(previous.id, previous.revision, previous.revision, "previous_recap is not a recap"))
        if conflicts:
            return EditConflict(tuple(conflicts))
        # the previous recap stands for the older entries: naming it (not copying its list)
        # keeps each fold record's size independent of how long the thread has run
        covers = ((previous.id,) if previous is not None else ()) + tuple(ids)
        env = self.ctx.current
        assert env is not None
        recap = RecapEntry(
            id=f"e{self.state.next_entry}", revision=1, author=env.sender, created_at=env.sent_at,
            retention=Retention.CRITICAL, content=self.counter.content(msg.live, msg.live, msg.gist),  # type: ignore[attr-defined]
            covers=covers, strategy=msg.strategy, data=msg.data,
        )
        folded = tuple(ids) + ((previous.id,) if previous is not None else ())
        await self._commit([EntriesFolded(recap, folded)])
        new_refs = tuple(EntryRef(i, self.state.entry(i).revision) for i in folded)  # type: ignore[union-attr]
        return EditApplied(new_refs, recap, self.state.seq)

    # -- limits -----------------------------------------------------------------------------------

    def limit_level(self) -> LimitLevel:
        limits, s = self.limits, self.state
        if limits.max_entries is None and limits.max_tokens is None and limits.max_bytes is None:
            return LimitLevel.OK  # no limit: nothing can be full (the default, asked at every step)
        return limits.level(len(s.active), s.active_tokens, s.active_bytes)

    def limits_to_check(self) -> bool:
        """Whether :meth:`check_limits` would do anything now: drop entries or publish a usage."""
        return self.limit_level() is not LimitLevel.OK or self.published_level is not LimitLevel.OK

    async def check_limits(self) -> None:
        """After a change: drop DISPOSABLE entries at the truncate threshold; publish the usage.

        The drop is the store's own decision, though made while it handles another actor's
        append (the engine's, which may only append): its record names the store.
        """
        edit = self._truncation()
        if edit is not None:
            await self._commit([edit], own=True)
        level = self.limit_level()
        if level is not LimitLevel.OK or level is not self.published_level:
            self.published_level = level
            s = self.state
            await self.ctx.publish(self.topic, HistoryUsage(  # type: ignore[attr-defined]
                self.thread_id, level, len(s.active), s.active_tokens, s.active_bytes))

    def settle_limits(self) -> None:
        """:meth:`check_limits` for a commit made at once, with nobody subscribed: the same
        drop, and no usage to publish (it would reach no one)."""
        edit = self._truncation()
        if edit is not None:
            self._commit_now([edit], own=True)
        self.published_level = self.limit_level()

    def _truncation(self) -> HistoryEdited | None:
        """The edit dropping DISPOSABLE entries, if the truncate threshold is crossed and
        there are some to drop."""
        if self.limit_level() is not LimitLevel.TRUNCATE:
            return None
        drop = self._disposable_to_drop()
        return HistoryEdited((), tuple(drop)) if drop else None

    def _disposable_to_drop(self) -> list[str]:
        """The oldest DISPOSABLE entries whose removal brings the history under its hard limit.

        A model output and its tool results go together (both DISPOSABLE) or not at all; the
        newest entry stays (the engine's state stands on it).
        """
        s = self.state
        if Retention.DISPOSABLE not in {e.retention for e in s.active}:
            return []  # the common case, checked at every append past the threshold: keep it cheap
        newest = s.last
        entries, tokens, size = len(s.active), s.active_tokens, s.active_bytes
        drop: list[str] = []
        units: list[list[HistoryEntry]] = []
        for entry in s.active:  # group into steps: an output with the results after it
            if isinstance(entry, ToolResultsEntry) and units and isinstance(units[-1][-1], ModelOutputEntry):
                units[-1].append(entry)
            else:
                units.append([entry])
        for unit in units:
            if any(e.retention is not Retention.DISPOSABLE or (newest is not None and e.id == newest.id)
                   for e in unit):
                continue
            if self._unit_conflicts({e.id for e in unit} | set(drop)):
                continue
            drop += [e.id for e in unit]
            entries -= len(unit)
            tokens -= sum(_tokens(e) for e in unit)
            size -= sum(_size(e) for e in unit)
            if self.limits.level(entries, tokens, size) not in (LimitLevel.HARD, LimitLevel.TRUNCATE):
                break
        return drop


def _neighbour(entries: list[HistoryEntry], at: int, step: int) -> HistoryEntry | None:
    """The nearest entry before (``step=-1``) or after (``+1``) position ``at`` that is no recap."""
    i = at + step
    while 0 <= i < len(entries):
        if not isinstance(entries[i], RecapEntry):
            return entries[i]
        i += step
    return None


def _tokens(entry: HistoryEntry) -> int:
    results = entry.results if isinstance(entry, ToolResultsEntry) else ()
    return entry.content.recent.tokens + sum(r.content.recent.tokens for r in results)


def _size(entry: HistoryEntry) -> int:
    results = entry.results if isinstance(entry, ToolResultsEntry) else ()
    return len(entry.content.live.text.encode("utf-8")) + sum(len(r.content.live.text.encode("utf-8")) for r in results)
