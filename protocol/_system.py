"""Messages of a system of agents: taking an agent's turn through the system's switchboard.

Agents of a system reach each other through tools (``send_message``, ``ask_agent``). A
message needs nothing but the receiver's history store (it is a notification). A question
needs the receiver's next *turn*: the asker claims it from the switchboard, which grants an
agent's turns one at a time and refuses a claim that would close a cycle of agents each
waiting for the next one's answer (a deadlock), then runs the receiver and gives the turn back.
"""

from __future__ import annotations

from attrs import frozen

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
