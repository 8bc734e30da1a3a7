"""Payloads of the event log: one record per accepted state change of a thread.

A thread's state is a fold of these, in seq order (see ``livecontext.actors.history``).
The record's ``kind`` is the payload's class name.
"""

from __future__ import annotations

from attrs import frozen

from ._apps import AppHistory
from ._entries import HistoryEntry, KeyedNote, Notification, ToolResultsEntry, UsageTotals
from ._lifecycle import TaskMarks
from ._message import Message
from ._setup import ThreadSettings
from ._tools import ToolResult, ToolSpec
from ._windows import AppWindow


@frozen
class EntryAppended(Message):
    """An entry was appended (an entry carrying notifications delivers them).

    Tool-results entries are appended by :class:`ToolResultsAppended`; schema version 1 wrote
    them here, with their results in them, and such a record still folds (consuming the
    recorded results)."""

    entry: HistoryEntry


@frozen
class ToolResultsAppended(Message):
    """A tool-results entry was appended; its results are the recorded ones (each result's
    text is stored once, in its :class:`ToolResultRecorded`), so ``entry.results`` is empty
    here and filled in by the fold."""

    entry: ToolResultsEntry


@frozen
class AppInfo:
    """One app of a thread: its name, the class that makes it (``module:qualname``) and the
    keyword arguments it was made with (JSON object text; empty: none)."""

    name: str
    source: str
    options: str = ""


@frozen
class RenderPolicy:
    """How a thread's calls were rendered, as recorded (the settings are
    ``livecontext.actors.history.ContextPolicy``, which checks them)."""

    name: str = "stable"
    """``stable`` or ``fill``."""
    low_water: float = 0.35
    high_water: float = 1.0


@frozen
class ThreadConfigured(Message):
    """How a thread's agent runs: its budget, the tools it offers the model, its apps, its
    model, how its calls are rendered and its other settings (recorded when a thread starts
    or any of them changes; a resumed thread runs with them unless told otherwise)."""

    budget: int
    tools: tuple[ToolSpec, ...] = ()
    apps: tuple[AppInfo, ...] = ()
    model: str = ""
    """The model spec the thread runs with (``echo``, ``scripted:PATH``, ``openai:NAME``);
    empty: not known (a model client given in Python, or a thread recorded before this)."""
    context: RenderPolicy | None = None
    """How its calls are rendered (``None``: recorded before there were policies, when every
    call was rendered as ``fill`` renders it)."""
    settings: ThreadSettings | None = None
    """Its limits, recap, analyzers, spend limits and the rest (``None``: recorded before
    threads recorded them; resumed with the defaults)."""


@frozen
class ContextCompacted(Message):
    """A model call's context was compacted (the ``stable`` policy): the whole history as of
    this record, rendered under ``target`` tokens, is the head of every call until the next
    compaction; each call adds the entries after ``upto``, whole."""

    upto: str
    """The newest entry the compaction shows (``""``: none)."""
    target: int
    """The tokens it was rendered under (the low-water mark, or more for a large latest
    observation), the windows' room already taken off."""
    budget: int
    """The budget of the call that compacted."""


@frozen
class ToolStarted(Message):
    """A non-idempotent tool started; without a later result it was interrupted."""

    call_id: str
    name: str


@frozen
class ToolResultRecorded(Message):
    """A tool result and the app effect it reports, committed together.

    The effect is an :class:`AppEffect`; stores written before effects were wrapped hold the
    app's bare effect, naming its app itself (see :func:`app_effect_of`).
    """

    result: ToolResult
    effect: Message | None = None


@frozen
class SystemPromptSet(Message):
    """The thread's system prompt (recorded when a thread starts or the prompt changes)."""

    text: str


@frozen
class HistorySnapshot(Message):
    """A thread's whole folded state at ``seq`` (so opening replays only the tail)."""

    thread_id: str
    seq: int
    entries: tuple[str, ...]
    """Each entry as its own JSON text (as the converter writes it): decoded only when used,
    so opening a long thread from a snapshot does not build every entry."""
    recorded: tuple[ToolResult, ...]
    started: tuple[tuple[str, str], ...]
    pending_notifications: tuple[Notification, ...]
    app_effects: tuple[Message, ...]
    """Written empty since :attr:`apps`; before, the last effect of each app (each naming
    its app, each holding the app's whole state: only the notebook's were)."""
    model_outputs: int
    next_entry: int
    next_notification: int
    system_prompt: str = ""
    index: str = "[]"
    """JSON array with one ``[id, kind, folded, recent_tokens, bytes, retention]`` row per
    entry: what opening needs to know of an entry without decoding it (snapshots written
    before retention was added have five columns)."""
    config: ThreadConfigured | None = None
    """The thread's last recorded configuration."""
    task: TaskMarks = TaskMarks()
    """What the log says of the task besides its entries (see ``protocol._lifecycle``)."""
    apps: tuple[AppHistory, ...] = ()
    """What each app with committed effects is rebuilt from: its latest saved state and the
    effects after it."""
    keyed: tuple[KeyedNote, ...] = ()
    """Every keyed notification the thread was posted (the messages of other agents), and
    the entry each rode on."""
    input_keys: tuple[str, ...] = ()
    """The keys of the inputs a system's runs fed the thread (see ``InputsGiven``)."""
    usage: UsageTotals | None = None
    """The thread's model calls' usage, summed (``None`` in snapshots written before usage
    was summed: opening one counts the outputs after it only)."""
    compacted: ContextCompacted | None = None
    """The thread's last compaction (see :attr:`compacted_at`)."""
    compacted_at: int = 0
    """The seq of :attr:`compacted`."""
    windows: tuple[AppWindow, ...] = ()
    """Each user app's window as last recorded (see :class:`AppWindowsRecorded`)."""
    windows_at: int = 0
    """The seq of the last :class:`AppWindowsRecorded` (0: none)."""


ThreadRecord = (EntryAppended | ToolResultsAppended | ThreadConfigured | ToolStarted | ToolResultRecorded
                | SystemPromptSet | HistorySnapshot | ContextCompacted)
"""The records of a thread's log written for its entries, tools and configuration (context
management and the lifecycle add theirs: :data:`ContextRecord`, :data:`LifecycleRecord`)."""
