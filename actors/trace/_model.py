"""What a trace holds: the actors of a thread, the messages between them, the engine's states,
each model call's context, and the marks on the timeline (see :func:`~._json.trace_json` for
the JSON the page and the SVG read).

Plain frozen records, built once by :func:`~._build.build_trace` and never changed. Times are
seconds since the first record included (:attr:`Trace.started_at`).
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping

from attrs import field, frozen

from livecontext.protocol.history import EngineState


class ActorRole(enum.StrEnum):
    """What an actor of a trace is: it chooses its column's colour and place."""

    ENGINE = "engine"
    HISTORY = "history"
    APPS = "apps"
    INPUT = "input"
    RECAP = "recap"
    ANALYZER = "analyzer"
    MODEL = "model"
    """The model: a pseudo-actor (``model/SPEC``), so that a call shows as engine -> model -> engine."""
    AGENT = "agent"
    """Another agent of the system (one column for all its actors)."""
    SYSTEM = "system"
    """A system's switchboard and runs of inputs (``system/NAME``)."""
    OTHER = "other"
    """Anything else that wrote to the thread (a client, a tool of the user's)."""


class MessageMode(enum.StrEnum):
    """How a message travels: an ask and its reply, a tell (no reply), or a publish (to a topic's subscribers)."""

    ASK = "ask"
    REPLY = "reply"
    TELL = "tell"
    PUBLISH = "publish"


class MarkType(enum.StrEnum):
    """What a mark on the timeline says happened."""

    FOLD = "fold"
    NOTIFICATION = "notification"
    EDIT = "edit"
    DENIAL = "denial"
    """A request refused for want of a capability (the author is who tried)."""
    PAUSE = "pause"
    FAILURE = "failure"


@frozen
class TraceActor:
    """One column of the sequence diagram."""

    id: str
    """The actor's id as the log writes it (``engine/main``), or a pseudo-actor's (``model/echo``, ``agent/critic``)."""
    role: ActorRole
    label: str
    """A short name for the column's head."""


@frozen
class TraceMessage:
    """One arrow of the sequence diagram."""

    i: int
    """Its place in :attr:`Trace.messages`."""
    seq: int
    """The record it belongs to (a system trace: the record's system seq)."""
    t: float
    sender: str
    receiver: str
    kind: str
    """The message's class name (``AppendInput``, ``Tail``, ``ModelRequest``...)."""
    mode: MessageMode
    summary: str
    """One line, at most :data:`SUMMARY_CHARS` characters."""
    reply_to: int | None = None
    """For a reply: the :attr:`i` of the message it answers."""


SUMMARY_CHARS = 120
"""The longest summary of a message or a mark."""


@frozen
class StateSpan:
    """The engine in one state, from the record that put it there to the one that took it out."""

    state: EngineState
    t0: float
    t1: float
    seq0: int
    seq1: int


@frozen
class ContextEntry:
    """One piece of what a model call was sent: an entry of the history at a level, a recap,
    or what every call carries (``system``: the system prompt; ``tools``: the tools' schemas;
    ``omitted``: the line saying what was left out)."""

    id: str
    level: str
    """``live``, ``recent``, ``gist`` or ``recap``."""
    tokens: int
    text: str
    """The key of its text in :attr:`Trace.texts`."""


@frozen
class LevelTokens:
    """A model call's tokens at each level, and how many entries it left out."""

    live: int = 0
    recent: int = 0
    gist: int = 0
    recap: int = 0
    omitted: int = 0
    """Entries (and recaps) of the history not shown: a count, not tokens."""

    @property
    def tokens(self) -> int:
        """The tokens of every level: what the call was sent."""
        return self.live + self.recent + self.gist + self.recap


@frozen
class ModelCall:
    """One model call: what it was sent (as rendered from the history just before its output
    was recorded) and what it answered."""

    n: int
    seq: int
    """The seq of the output's record."""
    t: float
    """When the call started (as the log can tell: its step's previous record)."""
    model: str
    tokens: int
    budget: int
    levels: LevelTokens
    entries: tuple[ContextEntry, ...]
    """What the model got, in the order it got it."""
    output: str
    """The key of the model's output text in :attr:`Trace.texts`."""
    usage: CallUsage | None = None
    """What the call cost, as its output recorded it (``None``: recorded before usage was)."""
    sent_tokens: int | None = None
    """The tokens of the context the call was sent, as the engine rendered it when it made
    the call (``None``: recorded before this was; :attr:`tokens` is the trace's own render)."""
    shared_tokens: int | None = None
    """Of :attr:`sent_tokens`, those of the leading messages identical to the call before's
    context: the prefix a provider's prompt cache can serve (``None``: unknown)."""


@frozen
class CallUsage:
    """One model call's usage: what the provider reported, or, for a model that reports none,
    the rendered count of its input and the counted answer."""

    input_tokens: int
    cached_input_tokens: int
    """Of :attr:`input_tokens`, those the provider read from its prompt cache."""
    output_tokens: int
    counted: bool = False
    """The model reported nothing: these are the rendered context's and the answer's counts."""


@frozen
class Mark:
    """Something worth a marker on the timeline, and who did it."""

    seq: int
    t: float
    type: MarkType
    author: str
    summary: str


@frozen
class Trace:
    """A thread's records, seen as actors and messages (see the module docstring)."""

    thread: str
    system: str | None
    at: int | None
    """The ``--at`` seq the trace stops at (``None``: the thread's end)."""
    last_seq: int
    started_at: dt.datetime
    duration: float
    budget: int
    """The thread's token budget (0: it never recorded one)."""
    records: int
    """How many records were read (in a system trace, of every thread of the system)."""
    actors: tuple[TraceActor, ...]
    messages: tuple[TraceMessage, ...]
    states: tuple[StateSpan, ...]
    model_calls: tuple[ModelCall, ...]
    texts: Mapping[str, str] = field(hash=False)
    marks: tuple[Mark, ...]
