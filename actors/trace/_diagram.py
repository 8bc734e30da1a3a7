"""The sequence diagram as it is drawn up: its columns (actors), arrows (messages), marks and
the texts the model calls refer to, each added once, in the order they happened."""

from __future__ import annotations

from ._model import SUMMARY_CHARS, ActorRole, Mark, MarkType, MessageMode, TraceActor, TraceMessage

ROLE_OF_KIND = {
    "engine": ActorRole.ENGINE,
    "history": ActorRole.HISTORY,
    "app": ActorRole.APPS,
    "input": ActorRole.INPUT,
    "recap": ActorRole.RECAP,
    "analyzer": ActorRole.ANALYZER,
    "model": ActorRole.MODEL,
    "agent": ActorRole.AGENT,
    "system": ActorRole.SYSTEM,
}
"""An actor's role by the kind its id starts with (``engine/main``: an engine)."""

_COLUMN_ORDER = (ActorRole.SYSTEM, ActorRole.INPUT, ActorRole.ENGINE, ActorRole.MODEL, ActorRole.HISTORY,
                 ActorRole.APPS, ActorRole.RECAP, ActorRole.ANALYZER, ActorRole.AGENT, ActorRole.OTHER)
"""Columns left to right: who feeds the engine, the engine and whom it calls, then those who
watch the history, then the rest."""

_LABELS = {ActorRole.ENGINE: "engine", ActorRole.HISTORY: "history store", ActorRole.APPS: "app host",
           ActorRole.INPUT: "input", ActorRole.RECAP: "recap"}


def line(text: str, limit: int = SUMMARY_CHARS) -> str:
    """``text`` on one line (runs of white space made one space), cut to ``limit`` characters."""
    flat = " ".join(text[:limit * 4].split())  # (a long text: only its head can be shown)
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


class Diagram:
    """Collects a trace's actors, messages, marks and texts."""

    def __init__(self) -> None:
        self.columns: dict[str, TraceActor] = {}
        self.messages: list[TraceMessage] = []
        self.marks: list[Mark] = []
        self.texts: dict[str, str] = {}
        self._keys: dict[str, str] = {}

    def add_column(self, column: TraceActor) -> str:
        """Add ``column`` (once) and return its id."""
        self.columns.setdefault(column.id, column)
        return column.id

    def actors(self) -> tuple[TraceActor, ...]:
        """The columns, left to right (by role, then in order of first appearance)."""
        order = {role: n for n, role in enumerate(_COLUMN_ORDER)}
        ranked = sorted(enumerate(self.columns.values()), key=lambda item: (order[item[1].role], item[0]))
        return tuple(actor for _, actor in ranked)

    def send(self, seq: int, t: float, sender: str, receiver: str, kind: str, mode: MessageMode,
             summary: str, reply_to: int | None = None) -> int:
        """Add one message; return its index."""
        i = len(self.messages)
        self.messages.append(TraceMessage(i, seq, t, sender, receiver, kind, mode, line(summary), reply_to))
        return i

    def ask(self, seq: int, t: float, sender: str, receiver: str, kind: str, summary: str,
            reply: str | None, reply_summary: str = "", reply_t: float | None = None) -> int:
        """An ask and, if ``reply`` names its reply's kind, the reply; return the ask's index."""
        i = self.send(seq, t, sender, receiver, kind, MessageMode.ASK, summary)
        if reply is not None:
            self.send(seq, t if reply_t is None else reply_t, receiver, sender, reply, MessageMode.REPLY,
                      reply_summary, i)
        return i

    def mark(self, seq: int, t: float, type: MarkType, author: str, summary: str) -> None:
        """Add a mark on the timeline."""
        self.marks.append(Mark(seq, t, type, author, line(summary)))

    def finish(self) -> tuple[tuple[TraceMessage, ...], tuple[Mark, ...]]:
        """The messages sorted by seq (numbered again, replies pointing at their asks' new
        numbers) and the marks sorted by seq.

        A message sent before a record was written (a model or tool call) goes with the
        record before it; from another thread of a system, it may be drawn after later ones.
        """
        marks = tuple(sorted(self.marks, key=lambda m: (m.seq, m.t)))
        key = [(m.seq, m.t) for m in self.messages]
        if all(a <= b for a, b in zip(key, key[1:])):  # (a thread's own messages come in order)
            return tuple(self.messages), marks
        ordered = sorted(self.messages, key=lambda m: (m.seq, m.t))  # (stable: a record's own order)
        number = {m.i: n for n, m in enumerate(ordered)}
        messages = tuple(TraceMessage(n, m.seq, m.t, m.sender, m.receiver, m.kind, m.mode, m.summary,
                                      number[m.reply_to] if m.reply_to is not None else None)
                         for n, m in enumerate(ordered))
        return messages, marks

    def text(self, text: str) -> str:
        """The key of ``text`` in :attr:`texts` (each text is kept once)."""
        key = self._keys.get(text)
        if key is None:
            key = self._keys[text] = f"t{len(self._keys)}"
            self.texts[key] = text
        return key


def column_of(actor: str, thread: str, agents: dict[str, str]) -> TraceActor:
    """The column of actor id ``actor`` (``kind/name``) in a trace of ``thread``.

    An actor of another thread (an agent of the same system, or any other thread) is drawn as
    one column for that thread's agent: ``agent/NAME`` (``agents`` maps thread ids to agent
    names; a thread that is not there is named by its id).
    """
    kind, _, name = actor.partition("/")
    role = ROLE_OF_KIND.get(kind)
    if role is None or role in (ActorRole.MODEL, ActorRole.AGENT, ActorRole.SYSTEM):
        if role is ActorRole.SYSTEM:
            return TraceActor(actor, role, f"system {name}")
        return TraceActor(actor, role or ActorRole.OTHER, name if role is not None else actor)
    if role is ActorRole.ANALYZER:
        if name.startswith(thread + "."):
            return TraceActor(actor, role, f"analyzer {name[len(thread) + 1:]}")
        owner = max((t for t in agents if name.startswith(t + ".")), key=len, default=None)
        return agent_column(owner, agents[owner]) if owner is not None else TraceActor(actor, ActorRole.OTHER, actor)
    if name == thread:
        return TraceActor(actor, role, _LABELS[role])
    return agent_column(name, agents.get(name))


def agent_column(thread: str, agent: str | None = None) -> TraceActor:
    """The one column of another thread's agent (named ``agent``, else by its thread)."""
    label = agent if agent is not None else thread
    return TraceActor(f"agent/{label}", ActorRole.AGENT, label)


