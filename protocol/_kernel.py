"""Messages the actor kernel itself sends: failures, restarts and error replies."""

from __future__ import annotations

from attrs import frozen

from ._ids import ActorId
from ._message import Message


@frozen
class ActorRestarted(Message):
    """An actor failed and its supervisor restarted it (published on ``system.supervision``)."""

    actor: ActorId
    error_type: str
    error: str
    restart_count: int
    """Restarts inside the current intensity window, this one included."""
    backoff_s: float


@frozen
class ActorEscalated(Message):
    """An actor failed more often than its restart intensity allows and was stopped.

    Sent to the failed actor's parent (or to the runtime, which publishes it on
    ``system.supervision`` and keeps it in :attr:`Runtime.failures`).
    """

    actor: ActorId
    error_type: str
    error: str
    restarts: int
    within_s: float


@frozen
class ErrorReply(Message):
    """The reply to an ``ask`` whose handler raised: the asker raises an error from it.

    Plain data, for the audit: in one process the handler's exception object travels beside
    it (the asker raises from that, by type); this records what it was.
    """

    error_type: str
    """The exception's class, ``module.QualName`` (``builtins.ValueError``)."""
    error: str
    """What it says."""


@frozen
class Ack(Message):
    """The reply to an ``ask`` whose handler returned nothing: ``ask`` then returns ``None``."""


KernelMessage = Ack | ActorEscalated | ActorRestarted | ErrorReply
"""The runtime's own messages: replies any ask may get, and supervision events."""
