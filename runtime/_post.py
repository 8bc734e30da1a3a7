"""The runtime's post: it stamps envelopes, keeps the asks waiting for a reply, answers them
(:class:`PendingReply` for an answer given later), drops what cannot be delivered, and audits
all three.

It knows nothing of actors or cells, so that both the cells (which answer asks) and the
:class:`~livecontext.runtime.Runtime` (which sends them) can use it.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import logging

from livecontext.protocol.kernel import ActorId, Envelope, ErrorReply, Message, Topic, message_id_template

from ._asks import ReplySlot
from ._audit import AuditEvent, AuditHook, AuditRecord
from ._clock import WALL_CLOCK, RuntimeClock
from ._errors import error_leaves

log = logging.getLogger("livecontext.runtime")

handling: contextvars.ContextVar[tuple[ActorId, Envelope] | None] = contextvars.ContextVar(
    "livecontext_handling", default=None
)
"""The actor whose handler the current task is running and the envelope it handles (for
causation ids), or None (outside handlers; a task a handler starts inherits it). Set by the
cell around every handler, in the actor's task."""


def describe(error: BaseException) -> str:
    """The text an :class:`ErrorReply` gives for ``error``: its message, and for an exception
    group (a nursery in the handler) the type and message of every exception it holds."""
    if isinstance(error, BaseExceptionGroup):
        leaves = "; ".join(f"{type(e).__name__}: {e}" for e in error_leaves(error))
        return f"{error.message}: {leaves}"
    return str(error)


class PendingReply:
    """A reply promised by :meth:`Context.defer_reply`; give it once, with :meth:`send` or
    :meth:`fail`."""

    __slots__ = ("_post", "_request", "_responder", "sent")

    def __init__(self, post: Post, request: Envelope, responder: ActorId) -> None:
        self._post = post
        self._request = request
        self._responder = responder
        self.sent = False
        """Whether the reply was given (later calls are ignored)."""

    def send(self, message: Message) -> None:
        """Deliver ``message`` as the reply (later calls are ignored)."""
        if not self.sent:
            self.sent = True
            self._post.reply(self._request, self._responder, message)

    def fail(self, error: BaseException) -> None:
        """Answer with ``error``: the asker raises :class:`RemoteActorError` from it, as if the
        handler had raised it (later calls are ignored)."""
        if not self.sent:
            self.sent = True
            self._post.reply_error(self._request, self._responder, error)


class Post:
    """Stamps a runtime's envelopes, answers its asks, and drops and audits what it must.

    An ask is *pending* from :meth:`open_ask` until it is answered: its asker waits on the
    :class:`ReplySlot` (until it gives up: the slot goes, and a late answer is dropped).
    """

    def __init__(self, clock: RuntimeClock = WALL_CLOCK) -> None:
        self._time_ns = clock.time_ns
        self._monotonic_ns = clock.monotonic_ns
        self._id_template = message_id_template(clock.random("message ids").getrandbits(16))
        self._counter = 0
        self._last_ns = 0
        self._asks: dict[str, ReplySlot] = {}
        """The asks a handler has yet to answer (their asker may have given up), by request id."""
        self._waiting = 0
        """Asks whose asker waits now."""
        self.hooks: list[AuditHook] = []
        """Called with every audit record (see :meth:`Runtime.add_audit_hook`)."""
        self.delivered = 0
        """Envelopes handed to a handler so far."""
        self.dropped = 0
        """Envelopes dropped so far."""
        self.busy = 0
        """Handlers running now (not counting those waiting in an ask); the stepping scheduler reads it."""

    def stamp(self, sender: ActorId, recipient: ActorId | Topic, payload: Message,
              correlation_id: str | None = None, causation_id: str | None = None) -> Envelope:
        """A new envelope from ``sender``; it is caused by the message being handled, if any."""
        self._counter += 1
        # ids sort by time: never let a wall clock stepped back make an id sort before older ones
        now_ns = self._time_ns()
        if now_ns < self._last_ns:
            now_ns = self._last_ns
        self._last_ns = now_ns
        if causation_id is None:
            cause = handling.get()
            causation_id = cause[1].message_id if cause is not None else None
        return Envelope(self._id_template % (now_ns, self._counter & 0xFFFFFFFF), sender, recipient,
                        dt.datetime.fromtimestamp(now_ns / 1e9, dt.timezone.utc), self._monotonic_ns(),
                        payload, correlation_id, causation_id)

    # -- asks -------------------------------------------------------------------------------------

    @property
    def pending_asks(self) -> int:
        """Asks whose asker waits now."""
        return self._waiting

    def open_ask(self, request: Envelope) -> ReplySlot:
        """Make ``request`` an ask: its answer lands in the slot returned."""
        slot = self._asks[request.message_id] = ReplySlot()
        self._waiting += 1
        return slot

    def close_ask(self, request: Envelope, slot: ReplySlot, *, reached: bool) -> None:
        """The asker no longer waits; ``reached``: whether the request reached the actor (if
        not, nobody will answer it)."""
        slot.waiting = False
        self._waiting -= 1
        if not reached:
            self._asks.pop(request.message_id, None)

    def is_ask(self, env: Envelope) -> bool:
        """Whether ``env`` is an ask not answered yet."""
        return env.message_id in self._asks

    def awaits_return(self, env: Envelope) -> bool:
        """Whether ``env`` is an ask that its handler's return value answers (not answered
        yet, nor deferred)."""
        slot = self._asks.get(env.message_id)
        return slot is not None and not slot.deferred

    def defer(self, request: Envelope, responder: ActorId) -> PendingReply | None:
        """Let ``request``'s handler answer it later; ``None`` if it is no ask."""
        slot = self._asks.get(request.message_id)
        if slot is None:
            return None
        slot.deferred = True
        return PendingReply(self, request, responder)

    def reply(self, request: Envelope, responder: ActorId, payload: Message,
              error: BaseException | None = None) -> None:
        """Answer ``request`` to whoever waits for it (with ``error``, for an :class:`ErrorReply`)."""
        if error is None and isinstance(payload, ErrorReply):
            # an ErrorReply carries a raised exception: one made by hand carries none
            self.reply_error(request, responder, TypeError(
                f"{responder} answered with an ErrorReply it made ({payload.error_type}: {payload.error}); "
                "raise the exception, or PendingReply.fail() it"))
            return
        slot = self._asks.pop(request.message_id, None)
        if slot is not None and slot.waiting and not self.hooks:
            # the asker needs only the payload: the envelope would be made for the audit alone
            slot.answer(payload, error)
            return
        # a reply answers (correlation) and is caused by (causation) its request
        env = self.stamp(responder, request.sender, payload, correlation_id=request.message_id,
                         causation_id=request.message_id)
        if slot is None or not slot.waiting:
            # (quiet: the asker gave up, and was told so: a late answer is nobody's fault)
            self.drop(env, f"no caller waits for correlation id {request.message_id} "
                           "(the ask timed out or was cancelled)", quiet=True)
            return
        slot.answer(payload, error)
        self.audit(AuditRecord(AuditEvent.REPLIED, env))

    def reply_error(self, request: Envelope, responder: ActorId, error: BaseException,
                    text: str | None = None) -> None:
        """Answer ``request`` with ``error`` (and ``text``, what the reply says of it:
        :func:`describe` by default)."""
        cls = type(error)
        self.reply(request, responder, ErrorReply(f"{cls.__module__}.{cls.__qualname__}",
                                                  describe(error) if text is None else text), error)

    def refuse(self, env: Envelope, responder: ActorId, error: BaseException, reason: str | None = None) -> None:
        """Answer an ask with ``error``; drop a tell, saying ``reason`` (by default ``error``)."""
        if env.message_id in self._asks:
            self.reply_error(env, responder, error)
        else:
            self.drop(env, f"{type(error).__name__}: {error}" if reason is None else reason)

    # -- delivered, dropped, audited ----------------------------------------------------------------

    def handed_over(self, env: Envelope) -> None:
        """Count (and audit) ``env`` as delivered: its handler starts."""
        self.delivered += 1
        if self.hooks:
            self.audit(AuditRecord(AuditEvent.DELIVERED, env))

    def drop(self, env: Envelope, reason: str, *, quiet: bool = False) -> None:
        """Count, log (unless ``quiet``: nobody's fault) and audit ``env`` as dropped."""
        self.dropped += 1
        (log.debug if quiet else log.warning)("dropped %s from %s to %s: %s", type(env.payload).__name__,
                                              env.sender, env.recipient, reason)
        if self.hooks:
            self.audit(AuditRecord(AuditEvent.DROPPED, env, reason))

    def audit(self, record: AuditRecord) -> None:
        """Call every audit hook with ``record``."""
        for hook in self.hooks:
            try:
                hook(record)
            except Exception:  # a broken hook must not break delivery
                log.exception("audit hook %r failed", hook)
