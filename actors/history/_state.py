"""A thread's history, rebuilt by replaying its event-log records (no I/O)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from livecontext.protocol.agent import AgentStatus, NotificationPosted
from livecontext.protocol.context import AccessDenied, EntriesFolded, HistoryEdited
from livecontext.protocol.history import (
    ENTRY_KINDS,
    NO_MARKS,
    EngineState,
    HistoryEntry,
    KeyedNote,
    ModelInputEntry,
    ModelOutputEntry,
    Notification,
    RecapEntry,
    Retention,
    ToolResult,
    ToolResultsEntry,
    UsageTotals,
    derive_state,
    derive_status,
    id_number,
    task_after,
)
from livecontext.protocol.kernel import Message
from livecontext.protocol.mcp import McpServerRestarted
from livecontext.protocol.records import (
    WHOLE_EVERY,
    AppEffect,
    AppHistory,
    AppWindow,
    AppWindowsChanged,
    ApprovalDecided,
    ApprovalRequested,
    AppWindowsRecorded,
    ContextCompacted,
    ControlToolEffect,
    EnginePaused,
    StepInterrupted,
    TaskTerminated,
    EntryAppended,
    HistorySnapshot,
    StepFailed,
    SystemPromptSet,
    ThreadConfigured,
    ToolResultRecorded,
    ToolResultsAppended,
    ToolStarted,
    app_effect_of,
)
from livecontext.protocol.system import InputsDone, InputsGiven, SystemDeclared
from livecontext.protocol.wire import LivecontextError, dump_json, load_json


from ._blocks import BLOCK, Block, block_of, encode_part
from ._lazy import Decoder, LazyEntries, Raw

log = logging.getLogger("livecontext.history")


class ReplayError(LivecontextError):
    """A record cannot be replayed onto the thread's state: the log is inconsistent.

    Contrast with folding entries into a recap (:class:`~livecontext.protocol.context.FoldIntoRecap`),
    an edit of the history, not a reading of its log.
    """


class AppTrack:
    """What one app is rebuilt from (see :class:`~livecontext.protocol.records.AppHistory`), kept
    up to date as effects are committed and states saved."""

    __slots__ = ("effects", "last_saved", "saved", "state")

    def __init__(self, history: AppHistory | None = None) -> None:
        self.state = history.state if history is not None else None
        self.saved = history.saved if history is not None else 0
        self.effects: list[AppEffect] = list(history.effects) if history is not None else []
        self.last_saved = history.last_saved if history is not None else None

    @property
    def count(self) -> int:
        """How many effects the app has committed."""
        return self.saved + len(self.effects)

    def history(self, app: str) -> AppHistory:
        """The track as the protocol carries it."""
        return AppHistory(app, self.state, self.saved, tuple(self.effects), self.last_saved)


class HistoryState:
    """Everything a thread's history store knows, rebuilt by :meth:`apply` over the log.

    Replay never calls a model or a tool: it only applies records.
    """

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.seq = 0
        self.entries: list[HistoryEntry] = []
        self.active: list[HistoryEntry] = []
        self.pos: dict[str, int] = {}
        """Position of each entry id in :attr:`entries`."""
        self.active_tokens = 0
        """Tokens of the active entries at RECENT (kept up to date, never recounted)."""
        self.active_bytes = 0
        """UTF-8 bytes of the active entries' LIVE text."""
        """Entries that are rendered (not folded, not recaps), oldest first."""
        self.recaps: list[RecapEntry] = []
        self.recorded: list[ToolResult] = []
        self.started: dict[str, str] = {}
        self.pending_notifications: list[Notification] = []
        self.input_keys: set[str] = set()
        """The keys of the inputs a system's runs fed (see ``InputsGiven``)."""
        self.keyed: dict[str, KeyedNote] = {}
        """Every keyed notification (a message of another agent), by key, with the entry it
        rode on: what makes posting it again a no-op, and how a question finds its reply."""
        self.apps: dict[str, AppTrack] = {}
        """What each app with committed effects is rebuilt from, by name, in order of first effect."""
        self.model_outputs = 0
        self.usage = UsageTotals()
        """The usage of every model output recorded, summed (folded ones included)."""
        self.windows: dict[str, AppWindow] = {}
        """Each user app's window and state as last recorded (:class:`AppWindowsRecorded`,
        :class:`AppWindowsChanged`)."""
        self.windows_at = 0
        """The seq of the last record of the windows (0: none)."""
        self.window_changes: dict[str, int] = {}
        """How many changes of each app's window were recorded since its last whole copy
        (not known, so absent, after a snapshot: the next record of it is then whole)."""
        self.compacted: tuple[int, ContextCompacted] | None = None
        """The last compaction of a call's context and its seq (the ``stable`` policy)."""
        self.next_entry = 1
        self.next_notification = 1
        self.system_prompt = ""
        self.config: ThreadConfigured | None = None
        """The thread's budget, tools and apps, as last recorded (``None``: never recorded)."""
        self.task = NO_MARKS
        """What the log says of the task besides its entries: what ``task_after`` makes of its records."""
        self.pinned: list[str] = []
        """Ids of the unfolded CRITICAL entries (the task), oldest first: always rendered."""
        self._newest: tuple[int, HistoryEntry | None] | None = None
        """``(seq, last)`` once :attr:`last` was found at ``seq``; forgotten when a record starts being applied."""
        self.parts: dict[int, str] = {}
        """The key of the snapshot part of each block (see :mod:`._blocks`) as the latest
        snapshot written (or opened) holds it."""
        self.changed: set[int] = set()
        """The blocks changed since the latest snapshot was taken: an entry appended, replaced,
        folded or removed. Every block with entries is here or in :attr:`parts`."""
        self._ordered = True
        """Whether entry ids increase along :attr:`entries` (they do in every log the history
        store writes): what grouping them in blocks stands on."""

    # -- derived ----------------------------------------------------------------------------------

    @property
    def last(self) -> HistoryEntry | None:
        """The newest entry that is not a recap (found once per seq: every request reads it)."""
        known = self._newest
        if known is not None and known[0] == self.seq:
            return known[1]
        newest = None
        for entry in reversed(self.entries):
            if not isinstance(entry, RecapEntry):
                newest = entry
                break
        self._newest = (self.seq, newest)
        return newest

    @property
    def state(self) -> EngineState:
        """The engine's state, derived from the tail and the recorded results."""
        return derive_state(self.last, len(self.recorded), self.task.ended is not None, self.task.terminated)

    @property
    def status(self) -> AgentStatus:
        """Where the task stands (``protocol._lifecycle``)."""
        state = self.state
        last = self.last
        pending = (last.tool_calls[len(self.recorded)]
                   if state is EngineState.WAITING_TOOL_RESULTS and isinstance(last, ModelOutputEntry) else None)
        waits = pending is not None and self.config is not None and any(
            spec.waits_on_agent for spec in self.config.tools if spec.name == pending.name)
        return derive_status(state, self.task, pending, waits)

    def pending_calls(self) -> int:
        """Tool calls of the last output still without a recorded result."""
        last = self.last
        if isinstance(last, ModelOutputEntry):
            return len(last.tool_calls) - len(self.recorded)
        return 0

    # -- replay -----------------------------------------------------------------------------------

    def apply(self, seq: int, payload: Message) -> None:
        """Apply one record to the state.

        Raises:
            ReplayError: ``seq`` is not the next one, or the record contradicts the state.
        """
        if seq != self.seq + 1:
            raise ReplayError(f"record seq {seq} does not follow {self.seq} in thread {self.thread_id}")
        self._newest = None  # (the record may change it, and fail halfway)
        if isinstance(payload, EntryAppended):
            self._append(payload.entry)
        elif isinstance(payload, ToolResultsAppended):
            self._append(self._with_recorded(payload.entry, seq))
        elif isinstance(payload, ToolStarted):
            self.started[payload.call_id] = payload.name
        elif isinstance(payload, ToolResultRecorded):
            self._record(payload)
        elif isinstance(payload, SystemPromptSet):
            self.system_prompt = payload.text
        elif isinstance(payload, ContextCompacted):
            self.compacted = (seq, payload)
        elif isinstance(payload, ThreadConfigured):
            self.config = payload
        elif isinstance(payload, AppWindowsRecorded | AppWindowsChanged):
            self._windows_recorded(payload, seq)
        elif isinstance(payload, HistoryEdited):
            self._edited(payload)
        elif isinstance(payload, EntriesFolded):
            self._folded(payload)
        elif isinstance(payload, AccessDenied | McpServerRestarted):
            pass  # an audit record (a denied attempt; an MCP server restarted): no history
        elif isinstance(payload, SystemDeclared | InputsGiven | InputsDone):
            pass  # a system's own log (system:NAME): no agent's history
        elif isinstance(payload, EnginePaused | StepFailed | ApprovalRequested | ApprovalDecided | StepInterrupted
                        | TaskTerminated):
            pass  # the task's marks only (below)
        elif isinstance(payload, NotificationPosted):
            note = payload.notification
            if note.key is not None:
                self.keyed[note.key] = KeyedNote(note)
            self.pending_notifications.append(note)
            self.next_notification = max(self.next_notification, id_number(payload.notification.id) + 1)
        else:
            raise ReplayError(f"unknown record {type(payload).__name__} at seq {seq} of {self.thread_id}")
        self.task = task_after(self.task, payload)
        self.seq = seq

    def _windows_recorded(self, record: AppWindowsRecorded | AppWindowsChanged, seq: int) -> None:
        """The apps' windows as ``record`` has them: whole, or changed from the last recorded.

        A change that does not fit the window recorded before it (a record between them
        was lost) is not applied: that app's window is unknown until its next whole copy,
        and the thread's history is whole all the same (its windows are only shown)."""
        self.windows_at = seq
        if isinstance(record, AppWindowsRecorded):
            for window in record.windows:
                self.windows[window.app] = window
                self.window_changes[window.app] = 0
            return
        for change in record.changes:
            before = self.windows.get(change.app)
            if before is None or not change.fits(before):
                self.windows.pop(change.app, None)
                self.window_changes.pop(change.app, None)
                log.warning("thread %s: the window of app %r recorded at seq %d changes a window that was "
                            "not recorded before it; it is unknown until its next whole copy",
                            self.thread_id, change.app, seq)
                continue
            self.windows[change.app] = change.applied(before)
            self.window_changes[change.app] = self.window_changes.get(change.app, WHOLE_EVERY) + 1

    def _index(self, entry: HistoryEntry) -> None:
        entries = self.entries
        if entries and id_number(list.__getitem__(entries, -1).id) >= id_number(entry.id):
            self._ordered = False  # (snapshots then hold every entry: see snapshot())
        self.changed.add(block_of(entry.id))
        self.pos[entry.id] = len(entries)
        entries.append(entry)
        if entry.folded:
            return
        if isinstance(entry, RecapEntry):
            self.recaps.append(entry)
        else:
            self._activate(entry)

    def _activate(self, entry: HistoryEntry) -> None:
        self.active.append(entry)
        if entry.retention is Retention.CRITICAL:
            self.pinned.append(entry.id)
        if isinstance(entry, ToolResultsEntry):
            self.active_tokens += entry_tokens(entry)
            self.active_bytes += entry_bytes(entry)
        else:  # (what the helpers give for any other entry, written out: every append comes here)
            self.active_tokens += entry.content.recent.tokens
            text = entry.content.live.text
            self.active_bytes += len(text) if text.isascii() else len(text.encode("utf-8"))

    def _deactivate_ids(self, ids: set[str]) -> None:
        """Take ``ids`` out of the active entries (and their counts); entries not decoded yet
        stay so (only the ones taken out are decoded, for their counts)."""
        active = self.active
        kept = []
        for at, item in enumerate(_stored(active)):  # (Raw or entry: both have .id)
            if item.id in ids:
                entry = active[at]
                self.active_tokens -= entry_tokens(entry)
                self.active_bytes -= entry_bytes(entry)
            else:
                kept.append(item)
        self.active = active.with_items(kept) if isinstance(active, LazyEntries) else kept
        self.recaps = [r for r in self.recaps if r.id not in ids]
        if self.pinned:
            self.pinned = [p for p in self.pinned if p not in ids]

    def active_with_retention(self, retention: Retention) -> list[str]:
        """The ids of the active entries of ``retention``, oldest first (read from the
        snapshot's index where an entry is not decoded yet: opening decodes none)."""
        found = []
        for at, item in enumerate(_stored(self.active)):
            value = item.block.retention[item.at] if type(item) is Raw else None
            if value is None:  # (decoded, or a snapshot written before rows said it)
                value = self.active[at].retention.value
            if value == retention.value:
                found.append(item.id)
        return found

    def pinned_positions(self) -> list[int]:
        """The positions in :attr:`active` of the pinned entries, ascending (found by binary
        search on the ids, which increase; entries not decoded yet stay so)."""
        return [self._active_position(entry_id) for entry_id in self.pinned]

    def _active_position(self, entry_id: str) -> int:
        target = id_number(entry_id)
        lo, hi = 0, len(self.active)
        while lo < hi:
            mid = (lo + hi) // 2
            if id_number(list.__getitem__(self.active, mid).id) < target:  # (Raw or entry: both have .id)
                lo = mid + 1
            else:
                hi = mid
        return lo

    def entry(self, entry_id: str) -> HistoryEntry | None:
        """The entry with this id, or ``None``."""
        at = self.pos.get(entry_id)
        return self.entries[at] if at is not None else None

    def _replace(self, new: HistoryEntry) -> None:
        at = self.pos.get(new.id)
        if at is None:
            raise ReplayError(f"edit of unknown entry {new.id} in {self.thread_id}")
        old = self.entries[at]
        if type(new) is not type(old):  # (an edit changes content, retention or folding only)
            raise ReplayError(f"edit of entry {new.id} in {self.thread_id} would turn a "
                            f"{type(old).__name__} into a {type(new).__name__}")
        self.entries[at] = new
        self.changed.add(block_of(new.id))
        if not old.folded and not isinstance(old, RecapEntry):
            self._deactivate_ids({old.id})
            if not new.folded:
                # keep the active list in order: re-insert at the entry's place
                index = next((i for i, e in enumerate(_stored(self.active)) if self.pos[e.id] > at),
                             len(self.active))
                self.active.insert(index, new)
                if new.retention is Retention.CRITICAL:
                    self.pinned = sorted([*self.pinned, new.id], key=id_number)
                self.active_tokens += entry_tokens(new)
                self.active_bytes += entry_bytes(new)
        elif isinstance(old, RecapEntry):
            assert isinstance(new, RecapEntry)  # (same kind: checked above)
            self.recaps = [new if r.id == new.id else r for r in self.recaps if not new.folded or r.id != new.id]

    def _edited(self, rec: HistoryEdited) -> None:
        for new in rec.entries:
            self._replace(new)
        if rec.removed:
            gone = set(rec.removed)
            self._deactivate_ids(gone)
            self.changed.update(block_of(entry_id) for entry_id in gone if entry_id in self.pos)
            # (items as stored: an entry not decoded yet stays so)
            kept = [e for e in list.__iter__(self.entries) if e.id not in gone]
            self.entries = self.entries.with_items(kept) if isinstance(self.entries, LazyEntries) else kept
            self.pos = {e.id: i for i, e in enumerate(kept)}

    def _folded(self, rec: EntriesFolded) -> None:
        ids = set(rec.folded)
        for entry_id in rec.folded:
            at = self.pos.get(entry_id)
            if at is None:
                raise ReplayError(f"fold into a recap of unknown entry {entry_id} in {self.thread_id}")
            old = self.entries[at]
            self.entries[at] = attrs.evolve(old, folded=True, revision=old.revision + 1)
            self.changed.add(block_of(entry_id))
        self._deactivate_ids(ids)
        self._index(rec.recap)
        self.next_entry = max(self.next_entry, id_number(rec.recap.id) + 1)

    def _append(self, entry: HistoryEntry) -> None:
        self._index(entry)
        if isinstance(entry, ModelOutputEntry):
            self.model_outputs += 1
            self.usage = self.usage.plus(entry.usage)
        elif isinstance(entry, ModelInputEntry) and entry.key is not None:
            self.input_keys.add(entry.key)
        elif isinstance(entry, ToolResultsEntry):
            self.recorded.clear()
            self.started.clear()
        notes = getattr(entry, "notifications", ())
        if notes:
            delivered = {n.id for n in notes}
            self.pending_notifications = [n for n in self.pending_notifications if n.id not in delivered]
            for note in notes:
                if note.key is not None:
                    self.keyed[note.key] = KeyedNote(note, entry.id)
        number = id_number(entry.id)
        if number >= self.next_entry:
            self.next_entry = number + 1

    def _with_recorded(self, entry: ToolResultsEntry, seq: int) -> ToolResultsEntry:
        """``entry`` holding the recorded results, which must answer every call of the last
        output, in order (a :class:`ToolResultsAppended` stores no results of its own)."""
        where = f"tool-results entry {entry.id} at seq {seq} of thread {self.thread_id}"
        if entry.results:
            raise ReplayError(f"{where} carries {len(entry.results)} results of its own; "
                            "the record's results are the recorded ones, so it must carry none")
        last = self.last
        if last is None:
            raise ReplayError(f"{where} is the first entry: there is no tool call it could answer")
        calls = [c.id for c in last.tool_calls] if isinstance(last, ModelOutputEntry) else []
        answered = [r.call_id for r in self.recorded]
        if not calls or answered != calls:
            raise ReplayError(f"{where} follows {ENTRY_KINDS[type(last)].replace('_', ' ')} {last.id}, whose "
                            f"tool calls are {calls}, but the recorded results answer {answered}: "
                            "the log is inconsistent")
        return attrs.evolve(entry, results=tuple(self.recorded))

    def _record(self, rec: ToolResultRecorded) -> None:
        last = self.last
        if not isinstance(last, ModelOutputEntry) or len(self.recorded) >= len(last.tool_calls):
            raise ReplayError(
                f"tool result for {rec.result.call_id} in {self.thread_id} has no pending tool call"
            )
        self.recorded.append(rec.result)
        self.started.pop(rec.result.call_id, None)
        if rec.effect is not None and not isinstance(rec.effect, ControlToolEffect):
            effect = app_effect_of(rec.effect)
            if effect is None:
                raise ReplayError(f"effect {type(rec.effect).__name__} of tool result {rec.result.call_id} "
                                f"in {self.thread_id} names no app")
            track = self.apps.get(effect.app)
            if track is None:
                track = self.apps[effect.app] = AppTrack()
            track.effects.append(effect)

    # -- apps -------------------------------------------------------------------------------------

    def app_histories(self) -> tuple[AppHistory, ...]:
        """What each app with committed effects is rebuilt from."""
        return tuple(track.history(app) for app, track in self.apps.items())

    def save_app_state(self, app: str, effects: int, state: str) -> bool:
        """Keep ``state``, an app's state as of its ``effects``-th effect, in place of those
        effects (they stay in the log). Returns ``False``, keeping nothing, unless ``effects``
        is past the state kept and not past the effects committed."""
        track = self.apps.get(app)
        if track is None or not track.saved < effects <= track.count:
            return False
        done = effects - track.saved
        track.last_saved = track.effects[done - 1]
        del track.effects[:done]
        track.state = state
        track.saved = effects
        return True

    # -- snapshots --------------------------------------------------------------------------------

    def snapshot(self) -> SnapshotDraft:
        """The state, cheaply: the blocks changed since the last snapshot was taken, as lists
        of their entries, encoded later by :meth:`SnapshotDraft.finish` (in a worker thread;
        entries never decoded since opening are not encoded again), and the part keys of the
        others. Tell the state how writing it went: :meth:`snapshot_stored` or
        :meth:`snapshot_lost`."""
        head = HistorySnapshot(
            self.thread_id, self.seq, (), tuple(self.recorded),
            tuple(self.started.items()), tuple(self.pending_notifications),
            (), self.model_outputs, self.next_entry,
            self.next_notification, self.system_prompt, config=self.config, task=self.task,
            apps=self.app_histories(), keyed=tuple(self.keyed.values()), input_keys=tuple(sorted(self.input_keys)),
            usage=self.usage, compacted=self.compacted[1] if self.compacted is not None else None,
            compacted_at=self.compacted[0] if self.compacted is not None else 0,
            windows=tuple(self.windows.values()), windows_at=self.windows_at,
        )
        changed, self.changed = self.changed, set()
        if not self._ordered:  # (ids out of order, in a log no history store wrote: no blocks)
            return SnapshotDraft(head, [(-1, None, _stored(self.entries))], changed)
        blocks: list[tuple[int, str | None, list[Any] | None]] = []
        for number in sorted(self.parts.keys() | changed):
            key = self.parts.get(number)
            if number in changed or key is None:
                blocks.append((number, None, self._block_items(number)))
            else:
                blocks.append((number, key, None))
        return SnapshotDraft(head, blocks, changed)

    def snapshot_stored(self, draft: SnapshotDraft) -> None:
        """``draft`` (finished) is written: its parts are the blocks' parts now."""
        if not self._ordered:
            return
        for number, key in draft.written.items():
            if key is None:
                self.parts.pop(number, None)
            else:
                self.parts[number] = key

    def snapshot_lost(self, draft: SnapshotDraft) -> None:
        """``draft`` was not written: the blocks it would have written are still changed."""
        self.changed |= draft.changed

    def _block_items(self, number: int) -> list[Any]:
        """The entries of block ``number`` as stored (:class:`Raw` ones stay so), found by
        binary search on the ids, which increase."""
        entries = self.entries
        get = list.__getitem__

        def first_at_least(target: int) -> int:
            lo, hi = 0, len(entries)
            while lo < hi:
                mid = (lo + hi) // 2
                if id_number(get(entries, mid).id) < target:
                    lo = mid + 1
                else:
                    hi = mid
            return lo

        return get(entries, slice(first_at_least(number * BLOCK), first_at_least((number + 1) * BLOCK)))

    @classmethod
    def from_snapshot(cls, snap: HistorySnapshot, decode: Decoder, blocks: Sequence[Block] = (),
                      keys: Sequence[str] = ()) -> HistoryState:
        """Rebuild a state from a snapshot and its parts' blocks (``keys``: the parts' keys);
        entries are decoded with ``decode`` when first used.

        Raises:
            ReplayError: the snapshot's entries are inconsistent.
        """
        state = cls(snap.thread_id)
        state.seq = snap.seq
        where = f"snapshot of {snap.thread_id} at seq {snap.seq}"
        if snap.entries:  # (written before parts: every entry in the head)
            rows = load_json(snap.index)
            if len(rows) != len(snap.entries) or blocks:
                raise ReplayError(f"{where}: index and entries disagree")
            blocks = [Block.whole(rows, snap.entries)]
        elif len(blocks) != len(keys) or any(a.number >= b.number for a, b in zip(blocks, blocks[1:])):
            raise ReplayError(f"{where}: its parts are not one block each, in order")
        state._index_blocks(blocks, decode)
        if snap.entries:
            state.changed = {block_of(entry_id) for entry_id in state.pos}
            numbers = [id_number(entry_id) for entry_id in blocks[0].ids]
            state._ordered = all(a < b for a, b in zip(numbers, numbers[1:]))
        else:
            state.parts = {block.number: key for block, key in zip(blocks, keys)}
        state.recorded = list(snap.recorded)
        state.started = dict(snap.started)
        state.pending_notifications = list(snap.pending_notifications)
        state.keyed = {k.notification.key: k for k in snap.keyed if k.notification.key is not None}
        state.input_keys = set(snap.input_keys)
        for old in snap.app_effects:  # (a snapshot written before apps: each app's last effect)
            effect = app_effect_of(old)
            if effect is None:
                raise ReplayError(f"{where}: effect {type(old).__name__} names no app")
            state.apps[effect.app] = AppTrack(AppHistory(effect.app, effects=(effect,)))
        for history in snap.apps:
            state.apps[history.app] = AppTrack(history)
        state.model_outputs = snap.model_outputs
        state.usage = snap.usage if snap.usage is not None else UsageTotals()
        state.compacted = (snap.compacted_at, snap.compacted) if snap.compacted is not None else None
        state.next_entry = snap.next_entry
        state.next_notification = snap.next_notification
        state.system_prompt = snap.system_prompt
        state.config = snap.config
        state.windows = {w.app: w for w in snap.windows}
        state.windows_at = snap.windows_at
        state.task = snap.task
        return state

    def _index_blocks(self, blocks: Sequence[Block], decode: Decoder) -> None:
        """Fill :attr:`entries`, :attr:`active` and what goes with them from the index of each
        block, without decoding an entry (but the recaps); a block with nothing folded, no
        recap and nothing pinned (most of them) goes in whole."""
        items: list[Any] = []
        active: list[Any] = []
        recaps: list[Raw] = []
        pos = self.pos
        critical = Retention.CRITICAL.value
        for block in blocks:
            base = len(items)
            raws = [Raw(block, i) for i in range(len(block))]
            items += raws
            pos.update(zip(block.ids, range(base, base + len(raws))))
            if not any(block.folded) and "recap" not in block.kinds and critical not in block.retention:
                active += raws
                self.active_tokens += sum(block.tokens)
                self.active_bytes += sum(block.sizes)
                continue
            for i, raw in enumerate(raws):
                if block.folded[i]:
                    continue
                if block.kinds[i] == "recap":
                    recaps.append(raw)  # (decoded below)
                    continue
                active.append(raw)
                self.active_tokens += block.tokens[i]
                self.active_bytes += block.sizes[i]
                retention = block.retention[i]
                if retention == critical or retention is None and decode(raw.text).retention is Retention.CRITICAL:
                    self.pinned.append(block.ids[i])  # (None: a snapshot written before rows said it)
        self.entries = LazyEntries(items, decode)
        self.active = LazyEntries(active, decode)
        self.recaps = [self.entries[pos[raw.id]] for raw in recaps]  # type: ignore[misc]

    @classmethod
    def replay(cls, thread_id: str, records: Iterable[tuple[int, Message]],
             start: HistoryState | None = None) -> HistoryState:
        """Replay ``(seq, payload)`` pairs, starting empty or from ``start``."""
        state = start if start is not None else cls(thread_id)
        for seq, payload in records:
            state.apply(seq, payload)
        return state


def index_row(entry: HistoryEntry) -> list[Any]:
    """What opening needs of an entry without decoding it: id, kind, folded, tokens, bytes,
    retention."""
    return [entry.id, ENTRY_KINDS[type(entry)], entry.folded,
            entry_tokens(entry), entry_bytes(entry), entry.retention.value]


class SnapshotDraft:
    """A snapshot taken in the actor (cheap) and encoded by :meth:`finish` (off the actor)."""

    def __init__(self, head: HistorySnapshot, blocks: list[tuple[int, str | None, list[Any] | None]],
                 changed: set[int]) -> None:
        self.head = head
        self.seq = head.seq
        self.blocks = blocks
        """``(number, key, None)`` for a block unchanged since the last snapshot (its part is
        stored), ``(number, None, items)`` for one to encode (block -1: every entry, in the
        head, as snapshots before parts held them)."""
        self.changed = changed
        """The blocks changed since the snapshot before (given back if this one is lost)."""
        self.written: dict[int, str | None] = {}
        """Once finished: the key of each block encoded (``None``: the block is empty now)."""
        self.new_bytes = 0
        """Once finished: the bytes of the parts encoded."""

    def finish(self, encode: Callable[[HistoryEntry], str]) -> tuple[HistorySnapshot, list[str], dict[str, bytes]]:
        """The snapshot's head, the keys of its parts in order, and the parts encoded now (by
        key). Entries still raw are reused as they are."""
        keys: list[str] = []
        parts: dict[str, bytes] = {}
        for number, key, items in self.blocks:
            if items is None:
                assert key is not None
                keys.append(key)
                continue
            rows = [(item.text, item.row) if type(item) is Raw else (encode(item), index_row(item))
                    for item in items]
            if number < 0:
                texts = tuple(t if isinstance(t, str) else t.decode("utf-8") for t, _ in rows)
                return attrs.evolve(self.head, entries=texts, index=dump_json([r for _, r in rows])), [], {}
            if not rows:
                self.written[number] = None
                continue
            data = encode_part(number, rows)
            key = self.written[number] = hashlib.sha256(data).hexdigest()
            keys.append(key)
            parts[key] = data
            self.new_bytes += len(data)
        return self.head, keys, parts


def _stored(entries: list[HistoryEntry]) -> list[Any]:
    """The items of ``entries`` as stored (a :class:`LazyEntries`' :class:`Raw` ones stay so)."""
    return entries.items_as_stored() if isinstance(entries, LazyEntries) else list(entries)


def entry_tokens(entry: HistoryEntry) -> int:
    """The tokens ``entry`` counts for in :attr:`HistoryState.active_tokens`: its text at
    RECENT, and its tool results'."""
    tokens = entry.content.recent.tokens
    if isinstance(entry, ToolResultsEntry):
        tokens += sum(r.content.recent.tokens for r in entry.results)
    return tokens


def entry_bytes(entry: HistoryEntry) -> int:
    """The UTF-8 bytes ``entry`` counts for in :attr:`HistoryState.active_bytes`: its LIVE
    text, and its tool results'."""
    size = _utf8_size(entry.content.live.text)
    if isinstance(entry, ToolResultsEntry):
        size += sum(_utf8_size(r.content.live.text) for r in entry.results)
    return size


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))

