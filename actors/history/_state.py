"""A thread's history as a fold of its event-log records (no I/O)."""

from __future__ import annotations

from collections.abc import Iterable

from livecontext.protocol import (
    EngineState,
    EntryAppended,
    HistoryEntry,
    HistorySnapshot,
    Message,
    ModelOutputEntry,
    Notification,
    NotificationPosted,
    RecapEntry,
    SystemPromptSet,
    ToolResult,
    ToolResultRecorded,
    ToolResultsEntry,
    ToolStarted,
    derive_state,
)


class FoldError(Exception):
    """A record cannot be applied to the state: the log is inconsistent."""


class HistoryState:
    """Everything a thread's history store knows, rebuilt by :meth:`apply` over the log.

    Replay never calls a model or a tool: it only folds records.
    """

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.seq = 0
        self.entries: list[HistoryEntry] = []
        self.active: list[HistoryEntry] = []
        """Entries that are rendered (not folded, not recaps), oldest first."""
        self.recaps: list[RecapEntry] = []
        self.recorded: list[ToolResult] = []
        self.started: dict[str, str] = {}
        self.pending_notifications: list[Notification] = []
        self.app_effects: dict[str, Message] = {}
        self.model_outputs = 0
        self.next_entry = 1
        self.next_notification = 1
        self.system_prompt = ""

    # -- derived ----------------------------------------------------------------------------------

    @property
    def last(self) -> HistoryEntry | None:
        """The newest entry that is not a recap."""
        for entry in reversed(self.entries):
            if not isinstance(entry, RecapEntry):
                return entry
        return None

    @property
    def state(self) -> EngineState:
        """The engine's state, derived from the tail and the recorded results."""
        return derive_state(self.last, len(self.recorded))

    def pending_calls(self) -> int:
        """Tool calls of the last output still without a recorded result."""
        last = self.last
        if isinstance(last, ModelOutputEntry):
            return len(last.tool_calls) - len(self.recorded)
        return 0

    # -- the fold ---------------------------------------------------------------------------------

    def apply(self, seq: int, payload: Message) -> None:
        """Fold one record into the state.

        Raises:
            FoldError: ``seq`` is not the next one, or the record contradicts the state.
        """
        if seq != self.seq + 1:
            raise FoldError(f"record seq {seq} does not follow {self.seq} in thread {self.thread_id}")
        if isinstance(payload, EntryAppended):
            self._append(payload.entry)
        elif isinstance(payload, ToolStarted):
            self.started[payload.call_id] = payload.name
        elif isinstance(payload, ToolResultRecorded):
            self._record(payload)
        elif isinstance(payload, SystemPromptSet):
            self.system_prompt = payload.text
        elif isinstance(payload, NotificationPosted):
            self.pending_notifications.append(payload.notification)
            self.next_notification = max(self.next_notification, _number(payload.notification.id) + 1)
        else:
            raise FoldError(f"unknown record {type(payload).__name__} at seq {seq} of {self.thread_id}")
        self.seq = seq

    def _append(self, entry: HistoryEntry) -> None:
        self.entries.append(entry)
        if isinstance(entry, RecapEntry):
            self.recaps.append(entry)
        elif not entry.folded:
            self.active.append(entry)
        if isinstance(entry, ModelOutputEntry):
            self.model_outputs += 1
        if isinstance(entry, ToolResultsEntry):
            self.recorded.clear()
            self.started.clear()
        delivered = {n.id for n in getattr(entry, "notifications", ())}
        if delivered:
            self.pending_notifications = [n for n in self.pending_notifications if n.id not in delivered]
        self.next_entry = max(self.next_entry, _number(entry.id) + 1)

    def _record(self, rec: ToolResultRecorded) -> None:
        last = self.last
        if not isinstance(last, ModelOutputEntry) or len(self.recorded) >= len(last.tool_calls):
            raise FoldError(
                f"tool result for {rec.result.call_id} in {self.thread_id} has no pending tool call"
            )
        self.recorded.append(rec.result)
        self.started.pop(rec.result.call_id, None)
        if rec.effect is not None:
            app = getattr(rec.effect, "app", None)
            if not isinstance(app, str):
                raise FoldError(f"effect {type(rec.effect).__name__} names no app")
            self.app_effects[app] = rec.effect

    # -- snapshots --------------------------------------------------------------------------------

    def snapshot(self) -> HistorySnapshot:
        """The whole state as one record-like value."""
        return HistorySnapshot(
            self.thread_id, self.seq, tuple(self.entries), tuple(self.recorded),
            tuple(self.started.items()), tuple(self.pending_notifications),
            tuple(self.app_effects.values()), self.model_outputs, self.next_entry,
            self.next_notification, self.system_prompt,
        )

    @classmethod
    def from_snapshot(cls, snap: HistorySnapshot) -> HistoryState:
        """Rebuild a state from :meth:`snapshot`."""
        state = cls(snap.thread_id)
        state.seq = snap.seq
        for entry in snap.entries:
            state.entries.append(entry)
            if isinstance(entry, RecapEntry):
                state.recaps.append(entry)
            elif not entry.folded:
                state.active.append(entry)
        state.recorded = list(snap.recorded)
        state.started = dict(snap.started)
        state.pending_notifications = list(snap.pending_notifications)
        state.app_effects = {getattr(e, "app"): e for e in snap.app_effects}
        state.model_outputs = snap.model_outputs
        state.next_entry = snap.next_entry
        state.next_notification = snap.next_notification
        state.system_prompt = snap.system_prompt
        return state

    @classmethod
    def fold(cls, thread_id: str, records: Iterable[tuple[int, Message]],
             start: HistoryState | None = None) -> HistoryState:
        """Fold ``(seq, payload)`` pairs, starting empty or from ``start``."""
        state = start if start is not None else cls(thread_id)
        for seq, payload in records:
            state.apply(seq, payload)
        return state


def _number(ident: str) -> int:
    digits = "".join(ch for ch in ident if ch.isdigit())
    return int(digits) if digits else 0
