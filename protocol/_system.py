"""Messages of a system of agents: taking an agent's turn through the system's switchboard.

Agents of a system reach each other through tools (``send_message``, ``ask_agent``). A
message needs nothing but the receiver's history store (it is a notification). A question
needs the receiver's next *turn*: the asker claims it from the switchboard, which grants an
agent's turns one at a time and refuses a claim that would close a cycle of agents each
waiting for the next one's answer (a deadlock), then runs the receiver and gives the turn back.

Messages and questions are keyed by their sender and tool call, so that a call run again
(after a crash, or in a fork of the system) finds what it did before instead of doing it
twice (:class:`FindMessage`). A system's own log (thread ``system:NAME``) records its agents
and where it was forked from (:class:`SystemDeclared`), and each run of inputs it was given
(:class:`InputsGiven`, then :class:`InputsDone`), each input keyed, so that a run interrupted
by a crash is resumed, feeding each input once (:class:`FindInputs`).
"""

from __future__ import annotations

from attrs import frozen

from ._content import Retention
from ._entries import Notification
from ._message import Message


@frozen
class ClaimTurn(Message):
    """Claim an agent's next turn (ask: :class:`TurnGranted` or :class:`TurnRefused`).

    The reply comes once the turn is the claimer's: at once if the agent is free, else when
    the claims before it have been given back. Who claims is the envelope's sender (an
    agent's app host, or a client of the system for the user).
    """

    agent: str
    """The agent whose turn is claimed, by name."""
    claim: str
    """The claimer's id for this claim, unique among its own; :class:`ReleaseTurn` names it."""


@frozen
class TurnGranted(Message):
    """The claimed turn is the claimer's until it sends :class:`ReleaseTurn`."""

    agent: str
    claim: str


@frozen
class TurnRefused(Message):
    """The claim was refused; nothing waits for it."""

    agent: str
    claim: str
    reason: str
    """What happened and what to do, for the model that asked."""
    cycle: tuple[str, ...] = ()
    """For a claim that would deadlock: the agents each waiting for the next, from the
    claimer back to it (``("critic", "planner", "critic")``); empty otherwise."""


@frozen
class ReleaseTurn(Message):
    """Give back a granted turn, or give up a claim still waiting (told; no reply)."""

    agent: str
    claim: str


@frozen
class FindMessage(Message):
    """Find the message or question with this key in the agent's history (ask:
    :class:`MessageFound`)."""

    key: str


@frozen
class MessageFound(Message):
    """What the history holds of a keyed message (all ``None``: it was never posted)."""

    notification: Notification | None = None
    read_in: str | None = None
    """The id of the entry that delivered it (``None``: not yet read)."""
    reply: str | None = None
    """The text of the agent's reply to the turn that read it: its first model output
    after that entry calling no tool, before any later input (``None``: none yet)."""
    in_latest_turn: bool = False
    """Whether it was read and no input came after (the agent's latest turn read it)."""


@frozen
class SystemMember:
    """An agent of a system and its thread."""

    name: str
    thread_id: str


@frozen
class SystemDeclared(Message):
    """A system's agents and origin (a record of the system's own log, ``system:NAME``).

    Written when the system is first opened, again when its agents change, and by a fork of
    another system (``livecontext fork --system``)."""

    name: str
    agents: tuple[SystemMember, ...]
    forked_from: str | None = None
    """The system this one was forked from, if any."""
    forked_at: int | None = None
    """The system seq of ``forked_from`` it was forked at, if any."""


@frozen
class GivenInput:
    """One input of a system's run: for which agent, its text, its key and retention."""

    agent: str
    text: str
    key: str
    """Unique to this input of this run (``RUN:AGENT:N``); its agent's entry keeps it."""
    retention: Retention | None = None


@frozen
class InputsGiven(Message):
    """A run of a system's inputs starts (a record of the system's own log): each agent is
    fed these, in order. Until :class:`InputsDone` names the run, it is not over: the next
    run of the system resumes it instead of feeding new inputs."""

    run: str
    """The run's id (unique, also across forks)."""
    inputs: tuple[GivenInput, ...]


@frozen
class InputsDone(Message):
    """Every input of run ``run`` is in its agent's history and every turn of the run ended."""

    run: str


@frozen
class FindInputs(Message):
    """Which of these input keys the agent's history holds (ask: :class:`InputsFound`)."""

    keys: tuple[str, ...]


@frozen
class InputsFound(Message):
    """The reply to :class:`FindInputs`."""

    keys: tuple[str, ...]
    """Those of the keys asked about that an entry of the history holds."""


SwitchboardRequest = ClaimTurn | ReleaseTurn
"""What a system's switchboard takes."""

SwitchboardReply = TurnGranted | TurnRefused
"""The switchboard's answers to :class:`ClaimTurn`."""

SystemLookup = FindMessage | FindInputs
"""Lookups that make a run of a tool call or of inputs happen once (ask: :data:`SystemLookupReply`)."""

SystemLookupReply = MessageFound | InputsFound
"""The answers to :data:`SystemLookup`."""

SystemRecord = SystemDeclared | InputsGiven | InputsDone
"""Log records of a system's own thread."""
