"""What an actor (or an outside client) uses to talk: :class:`Context` and :class:`ActorRef`."""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import trio
from attrs import field, frozen

from livecontext.protocol import ActorId, Envelope, Message, Topic

if TYPE_CHECKING:
    from ._actor import Actor
    from ._cell import _Cell
    from ._runtime import Runtime

A = TypeVar("A", bound="Actor")

handling: contextvars.ContextVar[tuple[ActorId, Envelope] | None] = contextvars.ContextVar(
    "livecontext_handling", default=None
)
"""The actor whose handler the current task is running and the envelope it handles (for
causation ids), or None (outside handlers; a task a handler starts inherits it). Set by the
runtime around every handler, in the actor's task or, for an inline one, in the sender's."""


@frozen
class RestartPolicy:
    """How a failed actor is restarted (its supervision).

    Up to ``max_restarts`` restarts within ``within_s`` seconds, each after a backoff that
    doubles from ``backoff_initial_s`` up to ``backoff_max_s``. One failure more and the actor
    is stopped and the failure escalates (an :class:`ActorEscalated` message).
    ``max_restarts=0`` never restarts.
    """

    max_restarts: int = 3
    within_s: float = 5.0
    backoff_initial_s: float = 0.01
    backoff_max_s: float = 1.0

    def __attrs_post_init__(self) -> None:
        if self.max_restarts < 0 or self.within_s <= 0 or self.backoff_initial_s < 0:
            raise ValueError(
                f"invalid RestartPolicy {self!r}: max_restarts >= 0, within_s > 0, backoff >= 0"
            )


@frozen(eq=False)
class ActorRef(Generic[A]):
    """A handle to a spawned actor: pass it to ``tell``/``ask``. Compares by actor id."""

    id: ActorId
    _cell: _Cell = field(repr=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActorRef) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)


Address = ActorRef[Any] | ActorId


class PendingReply:
    """A reply promised by :meth:`Context.defer_reply`; send it once with :meth:`send`."""

    __slots__ = ("_request", "_responder", "_rt", "sent")

    def __init__(self, runtime: Runtime, request: Envelope, responder: ActorId) -> None:
        self._rt = runtime
        self._request = request
        self._responder = responder
        self.sent = False

    def send(self, message: Message) -> None:
        """Deliver ``message`` as the reply (later calls are ignored)."""
        if not self.sent:
            self.sent = True
            self._rt._reply(self._request, self._responder, message)


class Context:
    """An actor's (or client's) way to send messages; the runtime stamps its id on each one.

    An actor gets its context as ``self.ctx``; code outside actors gets one from
    :meth:`Runtime.client`. There is no way to send with another sender id.
    """

    __slots__ = ("_cell", "runtime", "self_id")

    def __init__(self, runtime: Runtime, self_id: ActorId, cell: _Cell | None) -> None:
        self.runtime = runtime
        """The runtime this context belongs to (an attribute, not a property: an agent's
        actors read it ~26 times a turn, to ask it whether anyone listens or is idle)."""
        self.self_id = self_id
        self._cell = cell

    @property
    def current(self) -> Envelope | None:
        """The envelope whose handler is running in this task, if any (sender, ids, times)."""
        now = handling.get()
        return now[1] if now is not None else None

    @property
    def nursery(self) -> trio.Nursery:
        """The actor's own nursery, for its background tasks; cancelled when it stops or restarts.

        Raises:
            RuntimeError: for a client context, which has no nursery of its own.
        """
        if self._cell is None or self._cell.nursery is None:
            raise RuntimeError(f"{self.self_id} has no nursery: only a running actor has one")
        return self._cell.nursery

    async def tell(self, to: Address, message: Message) -> None:
        """Send ``message`` to ``to`` and return once it is in the mailbox (waits if full).

        Raises:
            UnhandledMessageError: ``to`` has no handler for the message's type.
            ActorStoppedError: ``to`` is stopped.
        """
        await self.runtime._tell(self, to, message)

    def tell_nowait(self, to: Address, message: Message) -> None:
        """Like :meth:`tell`, but raise :class:`MailboxFullError` instead of waiting."""
        self.runtime._tell_nowait(self, to, message)

    async def ask(self, to: Address, message: Message, *, timeout: float | None = 30.0,
                  shield: bool = False) -> Any:
        """Send ``message`` and wait for the reply: the handler's return value.

        An ask is a checkpoint, as Trio's own operations are: a cancel point before the
        message is sent (a cancelled ask never reaches the actor) and a schedule point (other
        tasks run before it returns), whichever task runs the handler.

        Args:
            timeout: seconds to wait for the reply (and for room in a full mailbox);
                ``None`` waits as long as it takes.
            shield: the ask runs as if inside ``trio.CancelScope(shield=True)``: the caller's
                cancellation cannot cut it short, and lands at the caller's next cancel point
                after it. Use it for a write whose follow-up must not be lost (an effect
                committed then applied, an input taken then recorded). The ask's own
                ``timeout`` still applies.

        Raises:
            AskTimeoutError: no reply within ``timeout`` seconds.
            AskCycleError: the ask would deadlock (the target waits, maybe through others, for us).
            RemoteActorError: the handler raised; the error's type and text are carried over.
            ActorStoppedError, UnhandledMessageError: as for :meth:`tell`.
        """
        return await self.runtime._ask(self, to, message, timeout, shield)

    async def publish(self, topic: Topic | str, message: Message) -> None:
        """Send ``message`` to every subscriber of ``topic`` (one envelope, shared)."""
        await self.runtime._publish(self, topic if isinstance(topic, Topic) else Topic(topic), message)

    def defer_reply(self) -> PendingReply | None:
        """Answer the ask being handled later, from another task, instead of by returning.

        Call it inside a handler; the handler's return value is then ignored, and the asker
        waits until :meth:`PendingReply.send` (or its own timeout). Returns ``None`` when the
        message being handled is a ``tell`` (nobody waits for a reply).
        """
        now = handling.get()
        if now is None:
            raise RuntimeError("defer_reply() is only valid inside a handler")
        return self.runtime._defer(now[1], self.self_id)

    def subscribe(self, topic: Topic | str) -> None:
        """Deliver what is published on ``topic`` to this actor's mailbox."""
        self.runtime._subscribe(self, topic if isinstance(topic, Topic) else Topic(topic))

    def unsubscribe(self, topic: Topic | str) -> None:
        """Stop receiving ``topic``."""
        self.runtime._unsubscribe(self, topic if isinstance(topic, Topic) else Topic(topic))
