"""Context management over a thread's state: reflection, compare-and-swap edits, folds.

Plain functions of a :class:`HistoryState` (no actor, no I/O): each edit returns the record
to commit, or the conflicts that refuse it, and the history store commits what it is given.
The edit rules live here, in one place: every edit names the entries and the revisions it
expects, and is refused whole (:class:`EditConflict`) if any changed, if it would split a
model output from its tool results, fold a CRITICAL entry or part of a run of
BATCH_COMPRESSIBLE entries, or touch the newest entry (the engine's state stands on it).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

import attrs

from livecontext.protocol.context import (
    Conflict,
    EditConflict,
    EditHistory,
    EntriesFolded,
    EntryRef,
    FoldIntoRecap,
    HistoryEdited,
    HistorySlice,
    MarkFolded,
    ReadHistory,
    RemoveEntries,
    ReplaceContent,
    SetRetention,
)
from livecontext.protocol.history import (
    ENTRY_KINDS,
    HistoryEntry,
    LevelText,
    ModelOutputEntry,
    RecapEntry,
    Retention,
    ToolResultsEntry,
    id_number,
)
from livecontext.protocol.kernel import ActorId
from livecontext.runtime import UsageError
from livecontext.runtime.tokens import TokenCounter

from ._state import HistoryState

# -- reflection -----------------------------------------------------------------------------------


def matches(entry: HistoryEntry, msg: ReadHistory) -> bool:
    """Whether ``entry`` passes the id, kind, time and fold filters of ``msg``.

    Id bounds compare id numbers (ids are given in increasing order), so a bound naming an entry since removed still works.
    """
    if not msg.include_folded and entry.folded:
        return False
    if msg.kinds and ENTRY_KINDS[type(entry)] not in msg.kinds:
        return False
    if msg.start_id is not None and id_number(entry.id) < id_number(msg.start_id):
        return False
    if msg.end_id is not None and id_number(entry.id) > id_number(msg.end_id):
        return False
    if msg.since is not None and entry.created_at < msg.since:
        return False
    return not (msg.until is not None and entry.created_at > msg.until)


def read_history(state: HistoryState, msg: ReadHistory) -> HistorySlice:
    """The entries of ``state`` that ``msg`` asks for, oldest first."""
    start = msg.start if msg.start is not None else 0
    stop = msg.stop if msg.stop is not None else len(state.entries)
    out = []
    if msg.include_folded or msg.start is not None or msg.stop is not None:
        positions: Sequence[int] = range(max(start, 0), min(stop, len(state.entries)))
    else:  # only unfolded entries: walk those, not the whole (mostly folded) history
        positions = sorted(state.pos[e.id] for e in (*state.recaps, *state.active))
    for i in positions:
        entry = state.entries[i]
        if matches(entry, msg):
            out.append(entry)
            if msg.limit is not None and len(out) >= msg.limit:
                break
    return HistorySlice(tuple(out), len(state.entries), state.active_tokens, state.seq)


# -- the rules every edit keeps -------------------------------------------------------------------


def stale_refs(state: HistoryState, refs: Iterable[EntryRef], *,
               newest_ok: frozenset[str] = frozenset()) -> list[Conflict]:
    """Conflicts of ``refs``: missing, stale, or the newest entry (unless its id is in
    ``newest_ok``: an edit that keeps it where it is)."""
    conflicts = []
    newest = state.last
    for ref in refs:
        entry = state.entry(ref.id)
        if entry is None:
            conflicts.append(Conflict(ref.id, ref.revision, None, "no such entry"))
        elif entry.revision != ref.revision:
            conflicts.append(Conflict(ref.id, ref.revision, entry.revision))
        elif newest is not None and entry.id == newest.id and entry.id not in newest_ok:
            conflicts.append(Conflict(ref.id, ref.revision, entry.revision,
                                      "the newest entry cannot be edited away: the engine's state stands on it"))
    return conflicts


def unit_conflicts(state: HistoryState, ids: set[str]) -> list[Conflict]:
    """Conflicts for ids that would split a model output from its tool results."""
    out = []
    entries = state.entries
    for entry_id in sorted(ids, key=id_number):
        at = state.pos[entry_id]
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


def batch_conflicts(state: HistoryState, ids: set[str]) -> list[Conflict]:
    """Conflicts for a fold of ``ids`` that takes part of a run of BATCH_COMPRESSIBLE
    entries (consecutive among the unfolded entries): such a run is folded whole or not at all."""
    out = []
    run: list[HistoryEntry] = []
    for entry in [*state.active, None]:  # (None: the end closes the last run)
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


# -- edits ----------------------------------------------------------------------------------------


def edit_history(state: HistoryState, msg: EditHistory, counter: TokenCounter) -> HistoryEdited | EditConflict:
    """The record of ``msg``'s edits applied to ``state``, or the conflicts that refuse them all.

    Raises:
        UsageError: ``msg`` has no edit, or one of a type EditHistory does not apply.
    """
    if not msg.edits:
        raise UsageError("EditHistory needs at least one edit")
    refs: list[EntryRef] = []
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
    conflicts = stale_refs(state, refs, newest_ok=frozenset(kept - touched))
    if conflicts:
        return EditConflict(tuple(conflicts))
    changed: dict[str, HistoryEntry] = {}
    removed: list[str] = []
    for edit in msg.edits:
        if isinstance(edit, RemoveEntries):
            for ref in edit.entries:
                entry = state.entry(ref.id)
                assert entry is not None
                if entry.retention is not Retention.DISPOSABLE:
                    conflicts.append(Conflict(ref.id, ref.revision, entry.revision,
                                              f"only DISPOSABLE entries can be removed; it is {entry.retention.value}"))
                removed.append(ref.id)
            continue
        assert isinstance(edit, (ReplaceContent, SetRetention, MarkFolded))  # (checked above)
        entry = changed.get(edit.entry.id) or state.entry(edit.entry.id)
        assert entry is not None
        if isinstance(edit, ReplaceContent):
            tokens = counter.count(edit.text)
            if isinstance(entry, ModelOutputEntry):  # an output's counts include its calls
                tokens += entry.content.live.tokens - counter.count(entry.content.live.text)
            content = attrs.evolve(entry.content, **{edit.level.value: LevelText(edit.text, tokens)})
            changed[entry.id] = attrs.evolve(entry, content=content)
        elif isinstance(edit, SetRetention):
            changed[entry.id] = attrs.evolve(entry, retention=edit.retention)
        else:
            if entry.retention is Retention.CRITICAL:
                conflicts.append(Conflict(entry.id, edit.entry.revision, entry.revision, "CRITICAL entries are never folded"))
            changed[entry.id] = attrs.evolve(entry, folded=True)
    hidden = {e.id for e in changed.values() if e.folded} | set(removed)
    conflicts += unit_conflicts(state, hidden)
    if conflicts:
        return EditConflict(tuple(conflicts))
    new_versions = tuple(attrs.evolve(e, revision=e.revision + 1) for e in changed.values() if e.id not in removed)
    return HistoryEdited(new_versions, tuple(removed))


def fold_into_recap(state: HistoryState, msg: FoldIntoRecap, counter: TokenCounter, *,
                    author: ActorId, at: dt.datetime) -> EntriesFolded | EditConflict:
    """The record folding ``msg``'s entries (and its previous recap) into a new recap by
    ``author`` made ``at``, or the conflicts that refuse the fold.

    Raises:
        UsageError: ``msg`` names no entry.
    """
    if not msg.entries:
        raise UsageError("FoldIntoRecap needs at least one entry")
    refs = list(msg.entries) + ([msg.previous_recap] if msg.previous_recap else [])
    conflicts = stale_refs(state, refs)
    if conflicts:
        return EditConflict(tuple(conflicts))
    ids = [r.id for r in msg.entries]
    active_ids = [e.id for e in state.active]
    try:
        first = active_ids.index(ids[0])
    except ValueError:
        return EditConflict((Conflict(ids[0], msg.entries[0].revision, msg.entries[0].revision,
                                      "already folded or not foldable"),))
    if active_ids[first:first + len(ids)] != ids:
        return EditConflict((Conflict(ids[0], msg.entries[0].revision, msg.entries[0].revision,
                                      "the entries are not contiguous among the unfolded entries"),))
    for ref in msg.entries:
        entry = state.entry(ref.id)
        assert entry is not None
        if entry.retention is Retention.CRITICAL:
            conflicts.append(Conflict(ref.id, ref.revision, entry.revision, "CRITICAL entries are never folded"))
    conflicts += unit_conflicts(state, set(ids))
    conflicts += batch_conflicts(state, set(ids))
    previous = state.entry(msg.previous_recap.id) if msg.previous_recap else None
    if previous is not None and not isinstance(previous, RecapEntry):
        conflicts.append(Conflict(previous.id, previous.revision, previous.revision, "previous_recap is not a recap"))
    if conflicts:
        return EditConflict(tuple(conflicts))
    # the previous recap stands for the older entries: naming it (not copying its list)
    # keeps each fold record's size independent of how long the thread has run
    covers = ((previous.id,) if previous is not None else ()) + tuple(ids)
    recap = RecapEntry(
        id=f"e{state.next_entry}", revision=1, author=author, created_at=at,
        retention=Retention.CRITICAL, content=counter.content(msg.live, msg.live, msg.gist),
        covers=covers, strategy=msg.strategy, data=msg.data,
    )
    return EntriesFolded(recap, tuple(ids) + ((previous.id,) if previous is not None else ()))


def _neighbour(entries: list[HistoryEntry], at: int, step: int) -> HistoryEntry | None:
    """The nearest entry before (``step=-1``) or after (``+1``) position ``at`` that is no recap."""
    i = at + step
    while 0 <= i < len(entries):
        if not isinstance(entries[i], RecapEntry):
            return entries[i]
        i += step
    return None
