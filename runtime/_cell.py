"""The runtime's private record of one actor (:class:`_Cell`: mailbox, instance, supervision
state, whether it is idle), and what the kernel decides from it: whether a task runs
one of its handlers, what an ask whose handler failed is answered, which failure is the actor's.
"""

from __future__ import annotations

import collections
import datetime as dt
import enum
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from livecontext.protocol import ActorId, Envelope, ErrorReply, Message, Topic

from ._actor import Actor
from ._context import Context, RestartPolicy
from ._kernel_errors import ActorStoppedError

if TYPE_CHECKING:
    from ._runtime import Runtime

SUPERVISION_TOPIC = Topic("system.supervision")
"""Where the runtime publishes :class:`ActorRestarted` and :class:`ActorEscalated`."""
SUPERVISOR_ID = ActorId("system", "supervisor")
"""The sender id of the runtime's own messages."""

_FAIRNESS_BATCH = 32  # messages handled back to back before an actor yields to others


class _Wake(Message):
    """Wakes a parked message loop so that it raises the failure of an inline handler."""


_WAKE = Envelope("wake", SUPERVISOR_ID, SUPERVISOR_ID, dt.datetime.fromtimestamp(0, dt.timezone.utc), 0, _Wake())


class _State(enum.Enum):
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"



class _Cell:
    """The runtime's private record of one actor: mailbox, instance, supervision state."""

    def __init__(
        self, rt: Runtime, actor_id: ActorId, factory: Callable[[], Actor], mailbox_size: int,
        policy: RestartPolicy | None, parent: ActorId | None,
    ) -> None:
        self.id = actor_id
        self.factory = factory
        self.mailbox_size = mailbox_size
        self.send, self.receive = trio.open_memory_channel[Envelope](mailbox_size)
        self.policy = policy
        self.parent = parent
        self.state = _State.STARTING
        self.instance: Actor | None = None
        self.actor_cls: type[Actor] | None = None
        self.nursery: trio.Nursery | None = None
        self.task: trio.lowlevel.Task | None = None
        """The task running the actor's handlers (its background tasks are in ``nursery``)."""
        self.scope = trio.CancelScope()
        self.done = trio.Event()
        self.failures: collections.deque[float] = collections.deque()
        self.topics: set[Topic] = set()
        self.ctx = Context(rt, actor_id, self)
        self.handled = 0
        # whether the actor is idle (see is_idle), for the inline path (Runtime._inline_instance)
        self.pending = 0
        """Envelopes put in the mailbox and not yet taken by the message loop."""
        self.parked = False
        """The message loop waits in ``receive()`` (nothing queued, no handler running)."""
        self.inline_running = False
        """An inline handler runs now, in a sender's task."""
        self.inline_failure: BaseException | None = None
        """An inline handler failed: the loop raises it, so the actor restarts."""
        self.carried: Envelope | None = None
        """A message the loop took when it learnt of such a failure: the next start handles it."""

    def is_idle(self) -> bool:
        """Whether the actor is running and has nothing to do: its loop waits on an empty
        mailbox and none of its handlers runs (nor has one failed unanswered)."""
        return (self.parked and not self.pending and not self.inline_running
                and self.inline_failure is None and self.state is _State.RUNNING)


def _in_handler(cell: _Cell, now: tuple[ActorId, Envelope] | None) -> bool:
    """Whether the current task is running (part of) one of ``cell``'s handlers (``now``: the
    task's ``handling``).

    A handler blocks its actor's mailbox while it waits; a background task started in
    ``ctx.nursery`` does not, even though it inherits the handler's context variables.
    Tasks of a nursery the handler opened itself are part of the handler. (An inline handler,
    a plain ``def``, cannot ask: it never runs outside the actor's task when this is asked.)
    """
    if now is None or (now[0] is not cell.id and now[0] != cell.id):
        return False
    task = trio.lowlevel.current_task()
    while task is not cell.task:
        nursery = task.parent_nursery
        if nursery is None or nursery is cell.nursery:
            return False
        task = nursery.parent_task
    return True


def _error_reply(cell: _Cell, request: Envelope, exc: BaseException) -> ErrorReply:
    """The reply to an ask whose handler ended with ``exc`` instead of a result."""
    if isinstance(exc, trio.Cancelled):
        if cell.state in (_State.STOPPING, _State.STOPPED):
            err = ActorStoppedError(cell.id, type(request.payload).__name__)
            return ErrorReply(type(err).__name__, str(err))
        return ErrorReply("Cancelled", "the handler was cancelled before it answered: the actor "
                                       "failed in a background task (it restarts) or is being stopped")
    if isinstance(exc, BaseExceptionGroup):  # from a nursery in the handler: name what failed
        leaves = "; ".join(f"{type(e).__name__}: {e}" for e in _leaves(exc))
        return ErrorReply(type(exc).__name__, f"{exc.message}: {leaves}")
    return ErrorReply(type(exc).__name__, str(exc))


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for inner in group.exceptions:
        out.extend(_leaves(inner) if isinstance(inner, BaseExceptionGroup) else [inner])
    return out


def _failure_of(exc: BaseException) -> BaseException | None:
    """The actor's own failure inside ``exc``, or None if ``exc`` is (or holds) a cancellation."""
    if isinstance(exc, BaseExceptionGroup):
        if exc.subgroup(lambda e: isinstance(e, (trio.Cancelled, KeyboardInterrupt, SystemExit))) is not None:
            return None
        for inner in exc.exceptions:
            found = _failure_of(inner)
            if found is not None:
                return found
        return None
    if isinstance(exc, Exception):
        return exc
    return None
