"""The runtime's error classes, split by who is at fault.

:class:`LivecontextError` is the base of every error raised on purpose by livecontext's
runtime and actors. Below it: :class:`UsageError` (the caller or the configuration is at
fault: fix the call, the flag or the file), :class:`ModelError` (the model or its provider is
at fault: retry later or change the model), :class:`ActorError` (an actor or the kernel:
a stopped actor, a timeout, a deadlock), and the kernel's errors below those.
"""

from __future__ import annotations

from collections.abc import Sequence

from livecontext.protocol import LivecontextError as LivecontextError  # (defined in the lowest layer)
from livecontext.protocol import ActorId, ErrorReply


class UsageError(LivecontextError):
    """The caller, a flag, a file or a configuration value is wrong; the message says which."""


class ModelError(LivecontextError):
    """A model call failed (after any retries); the history was not changed."""


class ActorError(LivecontextError):
    """Something went wrong between actors: see the subclasses in the kernel."""


def error_leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside ``exc``, exception groups opened all the way down (``[exc]``
    when it is no group): trio wraps even one error of a nursery in a group."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in error_leaves(inner)]
    return [exc]

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
    """The handler of an ``ask`` raised: the asker gets this error, raised *from* the
    handler's own exception (its ``__cause__``).

    Tell errors apart by :attr:`error_class` (or by ``__cause__``), never by a name:
    ``issubclass(exc.error_class, KeyError)``. Contrast with :class:`ActorStoppedError`,
    raised as itself: the actor stopped before it answered.
    """

    def __init__(self, actor: ActorId, reply: ErrorReply, error: BaseException) -> None:
        self.actor = actor
        self.error_class: type[BaseException] = type(error)
        """The class of the handler's exception."""
        self.error_type = reply.error_type
        """The same class, as text (``module.QualName``): for reading, not for comparing."""
        self.error = reply.error
        """What the handler's exception says (for a group: each exception it holds)."""
        super().__init__(f"{actor} failed handling the request: {self.error_class.__name__}: {reply.error}")


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
