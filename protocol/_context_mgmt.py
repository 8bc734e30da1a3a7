"""Context management: capabilities, reflection, compare-and-swap edits, folds, limits."""

from __future__ import annotations

import datetime as dt
import enum

from attrs import frozen

from ._content import Level, Retention
from ._entries import HistoryEntry, RecapEntry
from ._ids import ActorId
from ._message import Message


class Capability(enum.Enum):
    """What an actor may do to a thread's history; granted when the actor is spawned."""

    APPEND = "append"
    READ = "read"
    EDIT = "edit"
    FOLD = "fold"
    NOTIFY = "notify"
    APP_STATE = "app_state"
    """Keep the apps' saved states (:class:`SaveAppState`): the app host's."""
    DECIDE = "decide"
    """Approve or deny a tool call waiting for approval (``DecideApproval``): a person's, through
    the front door or the CLI (their clients hold every capability); never the engine's, so a
    model cannot approve its own calls."""


class LimitLevel(enum.Enum):
    """How close a history is to its limits (DESIGN.md, "Limits")."""

    OK = "ok"
    SOFT = "soft"
    """Past the soft threshold: a recap is suggested."""
    HARD = "hard"
    """Past the hard threshold: recap now."""
    TRUNCATE = "truncate"
    """Past the truncate threshold: fold before the next model call."""


@frozen
class EntryRef:
    """An entry and the revision an edit expects it to have (compare and swap)."""

    id: str
    revision: int


# -- reflection -------------------------------------------------------------------------------------


@frozen
class ReadHistory(Message):
    """Read entries (ask: :class:`HistorySlice`): the one way to read a thread's entries, for
    any reader (session, recap maintainer, analyzer, CLI). Every given filter must hold; with
    none, the unfolded entries and recaps (``include_folded=True``: every entry).

    Positions count all entries (folded ones included) from 0; ``stop`` is exclusive.
    """

    start_id: str | None = None
    """From this entry id (inclusive)."""
    end_id: str | None = None
    """Up to this entry id (inclusive)."""
    start: int | None = None
    stop: int | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    kinds: tuple[str, ...] = ()
    """Entry kinds: model_input, model_output, tool_results, recap."""
    include_folded: bool = False
    limit: int | None = None
    """At most this many entries, the oldest first."""


@frozen
class HistorySlice(Message):
    """Entries with their levels, token counts, retention and fold marks."""

    entries: tuple[HistoryEntry, ...]
    total: int
    """Entries in the thread, folded ones included."""
    active_tokens: int
    """Tokens of the thread's unfolded entries at RECENT."""
    seq: int
    """The log seq the slice was read at."""


# -- edits ---------------------------------------------------------------------------------------


@frozen
class ReplaceContent(Message):
    """Replace one level of an entry's text (its token count is recomputed)."""

    entry: EntryRef
    level: Level
    text: str


@frozen
class SetRetention(Message):
    """Change an entry's retention class."""

    entry: EntryRef
    retention: Retention


@frozen
class MarkFolded(Message):
    """Mark an entry folded: kept in the log, no longer rendered."""

    entry: EntryRef


@frozen
class RemoveEntries(Message):
    """Remove DISPOSABLE entries (others are refused)."""

    entries: tuple[EntryRef, ...]


@frozen
class EditHistory(Message):
    """Apply edits all together or not at all (ask: EditApplied / EditConflict / AccessDenied)."""

    edits: tuple[Message, ...]
    """ReplaceContent, SetRetention, MarkFolded, RemoveEntries."""


@frozen
class FoldIntoRecap(Message):
    """Fold a contiguous range of entries (and the previous recap) into one new recap.

    Ask: :class:`EditApplied`, :class:`EditConflict` or :class:`AccessDenied`.
    """

    entries: tuple[EntryRef, ...]
    """The entries folded, oldest first: contiguous among the unfolded entries."""
    live: str
    """The recap's text."""
    gist: str
    """Its one-line gist."""
    strategy: str
    """How the recap was made, kept in it (:attr:`RecapEntry.strategy`: open text)."""
    previous_recap: EntryRef | None = None
    """The recap this one replaces (its text should be included in ``live``)."""
    data: str = ""
    """The strategy's own state as JSON text, kept in the recap for the next fold."""


@frozen
class Conflict:
    """One entry whose revision is not the expected one (or that cannot be edited)."""

    id: str
    expected: int
    actual: int | None
    """``None`` when the entry does not exist."""
    reason: str = "stale revision"


@frozen
class EditApplied(Message):
    """The edit was applied."""

    entries: tuple[EntryRef, ...]
    """The edited entries with their new revisions."""
    recap: RecapEntry | None
    seq: int


@frozen
class EditConflict(Message):
    """The edit was refused as a whole; nothing changed."""

    conflicts: tuple[Conflict, ...]


@frozen
class AccessDenied(Message):
    """The sender lacks the capability; nothing changed. Also written to the log (audit)."""

    sender: ActorId
    capability: Capability
    action: str


EditDenied = AccessDenied
"""The denial of an edit or fold (the same message as any other denial)."""


HistoryEditRequest = ReplaceContent | SetRetention | MarkFolded | RemoveEntries | EditHistory | FoldIntoRecap
"""The edits of context management a history store takes (each checked against a capability)."""

HistoryEditReply = EditApplied | EditConflict | AccessDenied
"""The history store's answers to :data:`HistoryEditRequest`."""


# -- log records of context management --------------------------------------------------------------


@frozen
class HistoryEdited(Message):
    """Record: edits applied (the entries after the edit)."""

    entries: tuple[HistoryEntry, ...]
    """The new versions of the edited entries."""
    removed: tuple[str, ...] = ()


@frozen
class EntriesFolded(Message):
    """Record: entries folded into a recap."""

    recap: RecapEntry
    folded: tuple[str, ...]
    """Ids of the entries (and previous recap) now folded."""


ContextRecord = HistoryEdited | EntriesFolded
"""Log records written by context management."""


# -- limits -------------------------------------------------------------------------------------------


@frozen
class HistoryUsage(Message):
    """Published by the history store when its limit level changes or is above OK after a change."""

    thread_id: str
    level: LimitLevel
    entries: int
    tokens: int
    bytes: int


@frozen
class GetFill(Message):
    """Ask how full the thread's unfolded history is, against its limits (ask:
    :class:`HistoryFill`). A plain read: for whoever watches a running agent."""


@frozen
class HistoryFill(Message):
    """The reply to :class:`GetFill`: what the limits count now, the limits, and their thresholds."""

    thread_id: str
    level: LimitLevel
    entries: int
    """Unfolded entries."""
    tokens: int
    """Their tokens at RECENT."""
    bytes: int
    """Their UTF-8 bytes at LIVE."""
    max_entries: int | None = None
    """The limits (``None``: not limited by that measure)."""
    max_tokens: int | None = None
    max_bytes: int | None = None
    soft: float = 0.6
    """The thresholds, as fractions of each limit: at ``soft`` a recap is suggested, at
    ``hard`` it is due, at ``truncate`` the engine has it fold before its next model call."""
    hard: float = 0.8
    truncate: float = 1.0


@frozen
class FoldNow(Message):
    """Ask the recap maintainer to fold until the history is under its hard limit (ask: :class:`FoldDone`)."""


@frozen
class FoldDone(Message):
    """The reply to :class:`FoldNow` (and published after each fold)."""

    thread_id: str
    folds: int
    entries: int
    tokens: int


LimitEvent = HistoryUsage | FoldDone
"""Published when the history fills up (by its store) and after a fold (by the recap maintainer)."""

RecapRequest = FoldNow
"""What the recap maintainer is asked: fold now (ask: :class:`FoldDone`)."""
