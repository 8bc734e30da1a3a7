"""Errors of the actor kernel: stopped actors, timeouts, cycles, unhandled messages."""

from __future__ import annotations

from collections.abc import Sequence

from livecontext.protocol import ActorId

from ._errors import ActorError, UsageError


class ActorStoppedError(ActorError):
    """The recipient actor has stopped (or was never started): the message was not delivered.

    Contrast with :class:`AskTimeoutError`, where the actor is alive but did not answer in time.
    """

    def __init__(self, actor: ActorId | str, what: str = "message") -> None:
        self.actor = actor
        super().__init__(
            f"actor {actor} is stopped: the {what} was not delivered; "
            "spawn it again or send to a running actor"
        )


class AskTimeoutError(ActorError):
    """An ``ask`` got no reply within its timeout; the request may still be handled later."""

    def __init__(self, actor: ActorId, message_type: str, timeout: float) -> None:
        self.actor = actor
        self.message_type = message_type
        self.timeout = timeout
        super().__init__(
            f"ask {message_type} to {actor} got no reply within {timeout:g} s; "
            "the actor may be slow or blocked: raise the timeout or check what it waits for"
        )


class AskCycleError(ActorError):
    """An ``ask`` would close a cycle of actors each waiting for the next: a deadlock.

    Raised at once, instead of hanging. ``cycle`` lists the actors in wait order, the asker
    first and last.
    """

    def __init__(self, cycle: Sequence[ActorId]) -> None:
        self.cycle = tuple(cycle)
        path = " -> ".join(str(a) for a in self.cycle)
        super().__init__(
            f"ask cycle (deadlock): {path}; each actor waits for the next inside a handler. "
            "Break the cycle with tell, or ask from a background task"
        )


DeadlockError = AskCycleError
"""Another name for :class:`AskCycleError`."""


class UnhandledMessageError(ActorError):
    """The recipient has no handler for the message's type."""

    def __init__(self, actor: ActorId, message_type: str, handled: Sequence[str]) -> None:
        self.actor = actor
        self.message_type = message_type
        self.handled = tuple(handled)
        super().__init__(
            f"actor {actor} has no handler for {message_type}; it handles: "
            f"{', '.join(self.handled) or 'nothing'}"
        )


class RemoteActorError(ActorError):
    """The handler of an ``ask`` raised; this carries its error type and text to the asker."""

    def __init__(self, actor: ActorId, error_type: str, error: str) -> None:
        self.actor = actor
        self.error_type = error_type
        self.error = error
        super().__init__(f"{actor} failed handling the request: {error_type}: {error}")


class MailboxFullError(ActorError):
    """``tell_nowait`` found the recipient's bounded mailbox full (backpressure)."""

    def __init__(self, actor: ActorId, capacity: int) -> None:
        self.actor = actor
        self.capacity = capacity
        super().__init__(
            f"mailbox of {actor} is full ({capacity} messages); use tell (which waits) "
            "or give the actor a larger mailbox"
        )


class DuplicateActorError(UsageError):
    """An actor with this id is already running."""

    def __init__(self, actor: ActorId) -> None:
        self.actor = actor
        super().__init__(f"an actor {actor} is already running; stop it first or pick another name")


class UnknownActorError(UsageError):
    """No actor with this id was ever spawned in this runtime."""

    def __init__(self, actor: ActorId) -> None:
        self.actor = actor
        super().__init__(f"no actor {actor} in this runtime; spawn it before sending to it")
