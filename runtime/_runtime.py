"""The :class:`Runtime`: owns the root nursery, spawns, routes, supervises and stops actors.

Routing, asks and replies live here; an actor's own life (its task, message loop, handling one
message, supervision) in ``_lives.py``, its record in ``_cell.py``, and :func:`open_runtime`
in ``_open.py``.

One fast path, and only one: an ask, tell or publish for a handler marked
``@handler(inline=True)`` (a plain ``def``, so it cannot wait) that finds its actor idle runs
the handler in the sender's task rather than through the mailbox channel (see
:meth:`Runtime._inline_instance`). The request is still an envelope, audited and
capability-checked; the actor still handles one message at a time, in mailbox order. Every
ask, tell and publish is a checkpoint, as Trio's own operations are. A reply is made into an
envelope only when an audit hook is installed (the asker needs only its payload).
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import random
import time
from collections.abc import AsyncIterator, Callable, Hashable, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import trio
from attrs import frozen

from livecontext.protocol import (
    Ack,
    ActorEscalated,
    ActorId,
    Envelope,
    ErrorReply,
    Message,
    Topic,
    message_id_template,
)

from ._actor import Actor, find_handler
from ._asks import ReplySlot, WaitGraph
from ._audit import AuditEvent, AuditHook, AuditRecord
from ._cell import (
    _WAKE,
    SUPERVISOR_ID,
    _Cell,
    _failure_of,
    _in_handler,
    _State,
)
from ._context import (
    ActorRef,
    Address,
    Context,
    PendingReply,
    RestartPolicy,
    handling,
)
from ._kernel_errors import (
    ActorStoppedError,
    AskTimeoutError,
    DuplicateActorError,
    MailboxFullError,
    RemoteActorError,
    UnhandledMessageError,
    UnknownActorError,
)
from ._lives import cell_main, handle_inline

if TYPE_CHECKING:
    from ._stepping import SteppingScheduler

log = logging.getLogger("livecontext.runtime")
A = TypeVar("A", bound=Actor)

_NOTHING: frozenset[Hashable] = frozenset()
"""What an actor spawned without capabilities was granted."""


@frozen
class RuntimeStatistics:
    """A snapshot of the runtime's counters."""

    actors_running: int
    actors_stopped: int
    delivered: int
    dropped: int
    pending_asks: int
    restarts: int
    escalations: int


class Runtime:
    """Owns the root nursery; spawns, routes to, supervises and stops actors.

    Make one with :func:`open_runtime`. Every actor runs in the runtime's nursery; leaving the
    ``async with`` block stops them all in an orderly way (children and later spawns first,
    each drained, then cancelled after a deadline).
    """

    def __init__(self, nursery: trio.Nursery, scheduler: SteppingScheduler | None = None,
                 *, drain_timeout: float = 2.0, inline_asks: bool = True) -> None:
        self._nursery = nursery
        self._cells: dict[ActorId, _Cell] = {}
        self._order: list[ActorId] = []
        self._children: dict[ActorId, dict[ActorId, None]] = {}
        """Each parent's children, in spawn order (so stopping one needs no scan of every cell)."""
        self._clients: set[ActorId] = set()
        self._capabilities: dict[ActorId, frozenset[Hashable] | None] = {}
        self._topics: dict[str, list[_Cell | trio.MemorySendChannel[Envelope]]] = {}
        """Each topic's subscribers, by the topic's name (a str hashes in C; a Topic's hash is a
        Python call, and every step of an agent asks whether its topic has listeners)."""
        self._slots: dict[str, ReplySlot] = {}
        self._ask_ids: set[str] = set()
        self._deferred: set[str] = set()
        self._graph = WaitGraph()
        self._hooks: list[AuditHook] = []
        self._node = random.getrandbits(16)
        self._id_template = message_id_template(self._node)
        self._counter = 0
        self._last_ns = 0
        self._stepping = scheduler
        self._inline = inline_asks and scheduler is None
        """Whether a message for an idle actor's inline handler may run it in the sender's task."""
        self._drain_timeout = drain_timeout
        self._closing = False
        self.busy = 0
        """Handlers running now (not counting those waiting in an ask); the stepping scheduler reads it."""
        self.failures: list[ActorEscalated] = []
        """Escalations no parent took: actors stopped after too many failures."""
        self._delivered = 0
        self._dropped = 0
        self._restarts = 0
        if scheduler is not None:
            scheduler._attach(self)
        self._system = Context(self, SUPERVISOR_ID, None)

    # -- lifecycle ----------------------------------------------------------------------------

    async def spawn(
        self, factory: Callable[[], A], actor_id: ActorId | str, *, mailbox_size: int = 128,
        restart: RestartPolicy | None = RestartPolicy(), parent: ActorId | None = None,
        capabilities: Iterable[Hashable] = (),
    ) -> ActorRef[A]:
        """Start an actor and return once its :meth:`Actor.on_start` has finished.

        Args:
            factory: makes a fresh instance (called again at every restart).
            actor_id: its id, an :class:`ActorId` or ``"kind/name"``.
            mailbox_size: the bounded mailbox's capacity (senders wait when it is full).
            restart: the supervision policy; ``None`` never restarts.
            parent: the actor that receives :class:`ActorEscalated` if this one fails for good.
            capabilities: what the actor may do (e.g. ``Capability.FOLD``); actors that guard
                a resource check them with :meth:`has_capability`. Fixed at spawn.

        Raises:
            DuplicateActorError: an actor with this id is running.
            Exception: whatever ``on_start`` raised the first time.
        """
        aid = actor_id if isinstance(actor_id, ActorId) else ActorId.parse(actor_id)
        old = self._cells.get(aid)
        if (old is not None and old.state is not _State.STOPPED) or aid in self._clients:
            raise DuplicateActorError(aid)
        if mailbox_size < 1:
            raise ValueError(f"mailbox_size must be >= 1 (bounded), got {mailbox_size}")
        cell = _Cell(self, aid, factory, mailbox_size, restart, parent)
        self._cells[aid] = cell
        self._capabilities[aid] = frozenset(capabilities)
        if old is None:
            self._order.append(aid)
        if parent is not None:
            self._children.setdefault(parent, {})[aid] = None
        await self._nursery.start(cell_main, self, cell)
        return ActorRef(aid, cell)

    def client(self, name: str, *, capabilities: Iterable[Hashable] | None = None) -> Context:
        """A context for code outside actors (tests, the CLI): its id is ``client/<name>``.

        ``capabilities=None`` (the default) grants every capability: the code holding the
        runtime is the root of trust. Pass a set to act as a restricted client.
        """
        aid = ActorId("client", name)
        if aid in self._cells or aid in self._clients:
            raise DuplicateActorError(aid)
        self._clients.add(aid)
        self._capabilities[aid] = None if capabilities is None else frozenset(capabilities)
        return Context(self, aid, None)

    def has_capability(self, actor: ActorId, capability: Hashable) -> bool:
        """Whether ``actor`` was granted ``capability`` when it was spawned (or made a client)."""
        granted = self._capabilities.get(actor, _NOTHING)
        return granted is None or capability in granted

    def capabilities(self, actor: ActorId) -> frozenset[Hashable] | None:
        """What ``actor`` was granted (``None``: everything, for an unrestricted client)."""
        return self._capabilities.get(actor, _NOTHING)

    def ref(self, actor_id: ActorId | str) -> ActorRef[Any]:
        """The ref of a spawned actor, by id."""
        aid = actor_id if isinstance(actor_id, ActorId) else ActorId.parse(actor_id)
        cell = self._cells.get(aid)
        if cell is None:
            raise UnknownActorError(aid)
        return ActorRef(aid, cell)

    def is_running(self, actor: Address) -> bool:
        """Whether the actor is started and not stopped."""
        cell = self._cells.get(actor.id if isinstance(actor, ActorRef) else actor)
        return cell is not None and cell.state in (_State.RUNNING, _State.STARTING)

    async def stop(self, actor: Address, *, drain_timeout: float | None = None) -> None:
        """Stop an actor in order: refuse new mail, handle what is queued, ``on_stop``, cancel.

        Its children stop first. After ``drain_timeout`` seconds of draining, it is cancelled.
        """
        cell = self._cell(actor)
        if cell.state is _State.STOPPED:
            return
        for child_id in list(self._children.get(cell.id, ())):
            child = self._cells[child_id]
            if child.parent == cell.id:
                await self.stop(ActorRef(child.id, child), drain_timeout=drain_timeout)
        for topic in list(cell.topics):
            self._unsubscribe(cell.ctx, topic)
        cell.state = _State.STOPPING
        if self._stepping is not None:
            self._stepping._release(cell)
        cell.send.close()
        with trio.move_on_after(self._drain_timeout if drain_timeout is None else drain_timeout):
            await cell.done.wait()
        if not cell.done.is_set():
            cell.scope.cancel()
            await cell.done.wait()

    async def aclose(self) -> None:
        """Stop every actor, latest spawned first (so children go before parents)."""
        self._closing = True
        if self._stepping is not None:
            self._stepping._detach()
            self._stepping = None
        for aid in reversed(self._order):
            cell = self._cells[aid]
            if cell.state is not _State.STOPPED:
                await self.stop(ActorRef(aid, cell))

    # -- audit and statistics -------------------------------------------------------------------

    def add_audit_hook(self, hook: AuditHook) -> None:
        """Call ``hook`` with an :class:`AuditRecord` for every delivered, replied or dropped envelope."""
        self._hooks.append(hook)

    def remove_audit_hook(self, hook: AuditHook) -> None:
        """Stop calling ``hook``."""
        self._hooks.remove(hook)

    def statistics(self) -> RuntimeStatistics:
        """Counters of the runtime so far."""
        running = sum(1 for c in self._cells.values() if c.state is not _State.STOPPED)
        return RuntimeStatistics(
            actors_running=running, actors_stopped=len(self._cells) - running,
            delivered=self._delivered, dropped=self._dropped, pending_asks=len(self._slots),
            restarts=self._restarts, escalations=len(self.failures),
        )

    def is_idle(self, actor: Address) -> bool:
        """Whether ``actor`` has nothing to do at this moment.

        True when it is running, nothing waits in its mailbox (nor, under a stepping
        scheduler, is held for it) and none of its handlers runs. A snapshot, which holds until the caller next yields to Trio. It lets an actor
        skip an ask whose answer it already knows, when nothing is on its way that could
        change that answer (see the engine's input pull).
        """
        cell = self._cells.get(actor.id if isinstance(actor, ActorRef) else actor)
        if cell is None or not cell.is_idle():
            return False
        return self._stepping is None or not self._stepping._holds_for(cell)

    def has_subscribers(self, topic: Topic | str) -> bool:
        """Whether anything (an actor or an open subscription) receives ``topic`` now.

        Lets a publisher skip building messages nobody would receive (e.g. streamed text).
        """
        return bool(self._topics.get(topic.name if isinstance(topic, Topic) else topic))

    @asynccontextmanager
    async def open_subscription(self, topic: Topic | str, *, buffer: int = 256) -> AsyncIterator[trio.MemoryReceiveChannel[Envelope]]:
        """Receive what is published on ``topic`` outside any actor (a bounded channel).

        A full buffer makes publishers wait (backpressure), so read it promptly.
        """
        t = topic if isinstance(topic, Topic) else Topic(topic)
        send, receive = trio.open_memory_channel[Envelope](buffer)
        self._topics.setdefault(t.name, []).append(send)
        try:
            async with receive:
                yield receive
        finally:
            subs = self._topics.get(t.name, [])
            if send in subs:
                subs.remove(send)
            send.close()

    # -- sending ----------------------------------------------------------------------------------

    def _envelope(self, sender: ActorId, recipient: ActorId | Topic, payload: Message,
                  correlation_id: str | None = None, causation_id: str | None = None) -> Envelope:
        self._counter += 1
        # ids sort by time: never let a wall clock stepped back make an id sort before older ones
        now_ns = time.time_ns()
        if now_ns < self._last_ns:
            now_ns = self._last_ns
        self._last_ns = now_ns
        if causation_id is None:
            cause = handling.get()
            causation_id = cause[1].message_id if cause is not None else None
        return Envelope(self._id_template % (now_ns, self._counter & 0xFFFFFFFF), sender, recipient,
                        dt.datetime.fromtimestamp(now_ns / 1e9, dt.timezone.utc), time.monotonic_ns(),
                        payload, correlation_id, causation_id)

    def _cell(self, to: Address) -> _Cell:
        if isinstance(to, ActorRef):
            known = to._cell
            if known.state is not _State.STOPPED:
                # a cell never leaves STOPPED, and only a stopped one is replaced (see spawn):
                # one that is not stopped is its id's current cell, no lookup needed
                return known
            to = to.id
        cell = self._cells.get(to)
        if cell is None:
            raise UnknownActorError(to)
        return cell

    def _target(self, to: Address, message: Message) -> tuple[_Cell, str | None]:
        """The cell a message for ``to`` goes to, and the name of the handler that will take
        it (``None`` while the actor has not started: its class is not known yet).

        Raises:
            ActorStoppedError: the actor is stopping or stopped.
            UnhandledMessageError: the actor has no handler for the message's type.
        """
        cell = self._cell(to)
        if cell.state is _State.STOPPED or cell.state is _State.STOPPING:
            raise ActorStoppedError(cell.id, type(message).__name__)
        cls = cell.actor_cls
        if cls is None:
            return cell, None
        name = find_handler(cls, type(message))
        if name is None:
            raise UnhandledMessageError(
                cell.id, type(message).__name__, [t.__name__ for t in cls.handled_types()]
            )
        return cell, name

    def _inline_instance(self, cell: _Cell, name: str | None, env: Envelope) -> Actor | None:
        """The instance whose inline handler ``name`` may take ``env`` now, in the sender's
        task, or ``None``: the message goes through the mailbox.

        It may when the handler is marked ``@handler(inline=True)`` (so it is a plain ``def``,
        which cannot wait), the actor is idle (its loop waits on an empty mailbox: ``env``
        would be the next message it handles) and the sender is allowed to send it (a denial
        runs ``on_denied``, which may wait). The actor still handles one message at a time,
        in mailbox order; only which task runs the handler differs.
        """
        instance = cell.instance
        if (name is None or instance is None or not self._inline or name not in type(instance)._inline
                or not cell.is_idle()):
            return None
        needed = instance.capability_for(type(env.payload))
        if needed is not None and not self.has_capability(env.sender, needed):
            return None
        return instance

    def _run_inline(self, cell: _Cell, instance: Actor, env: Envelope, name: str) -> None:
        """Handle ``env`` with the inline handler ``name`` in this task (see
        :meth:`_inline_instance`). A failure is answered to an asker, then raised in the
        actor's loop (which it wakes), so supervision restarts the actor as usual."""
        cell.inline_running = True
        try:
            handle_inline(self, cell, instance, env, name)
        except BaseException as exc:
            if _failure_of(exc) is None:
                raise
            cell.inline_failure = exc
            try:  # wake the loop so that it raises it now (a full mailbox wakes it anyway)
                cell.send.send_nowait(_WAKE)
                cell.pending += 1
            except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
                pass
        finally:
            cell.inline_running = False

    def _put_nowait(self, cell: _Cell, env: Envelope, name: str | None) -> bool:
        """Hand ``env`` to ``cell`` without waiting: to its inline handler, to the stepping
        scheduler, or into its mailbox. False if the mailbox is full."""
        instance = self._inline_instance(cell, name, env)
        if instance is not None and name is not None:
            self._run_inline(cell, instance, env, name)
            return True
        if self._stepping is not None:
            self._stepping._hold(cell, env)
            return True
        try:
            cell.send.send_nowait(env)
        except trio.WouldBlock:
            return False
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise ActorStoppedError(cell.id, type(env.payload).__name__) from None
        cell.pending += 1
        return True

    async def _put(self, cell: _Cell, env: Envelope, name: str | None) -> None:
        """:meth:`_put_nowait`, waiting for room in a full mailbox (backpressure)."""
        if self._put_nowait(cell, env, name):
            return
        cell.pending += 1
        try:
            await cell.send.send(env)
        except BaseException as exc:
            cell.pending -= 1
            if isinstance(exc, (trio.ClosedResourceError, trio.BrokenResourceError)):
                raise ActorStoppedError(cell.id, type(env.payload).__name__) from None
            raise

    async def _tell(self, ctx: Context, to: Address, message: Message) -> None:
        # a checkpoint as Trio's own sends are: cancelled before, never after, it is sent
        cell, name = self._target(to, message)
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._put(cell, self._envelope(ctx.self_id, cell.id, message), name)
        await trio.lowlevel.cancel_shielded_checkpoint()

    def _tell_nowait(self, ctx: Context, to: Address, message: Message) -> None:
        cell, name = self._target(to, message)
        if not self._put_nowait(cell, self._envelope(ctx.self_id, cell.id, message), name):
            raise MailboxFullError(cell.id, cell.mailbox_size)

    async def _ask(self, ctx: Context, to: Address, message: Message, timeout: float | None,
                   shield: bool) -> Any:
        """Ask ``to``; see :meth:`Context.ask`.

        A checkpoint as Trio's own operations are: a cancel point before the request is sent
        (unless ``shield``), and a schedule point after. An inline handler (see
        :meth:`_inline_instance`) answers before the asker yields, unless it defers its
        reply; otherwise the asker waits for the reply, recorded in the wait-for graph.
        """
        cell, name = self._target(to, message)
        if not shield:
            await trio.lowlevel.checkpoint_if_cancelled()
        env = self._envelope(ctx.self_id, cell.id, message)
        slot = ReplySlot(cell.id)
        self._slots[env.message_id] = slot
        self._ask_ids.add(env.message_id)
        queued = False
        try:
            instance = self._inline_instance(cell, name, env)
            if instance is not None and name is not None:
                queued = True
                self._run_inline(cell, instance, env, name)
                if slot.reply is not None:
                    await trio.lowlevel.cancel_shielded_checkpoint()
                    return self._reply_of(cell, message, slot, timeout)
            # (an idle actor's inline handler waits for nobody: only the mailbox can close a cycle)
            blocking = self._start_waiting(ctx, cell)
            try:
                # the timeout covers the wait for room in a full mailbox too
                with trio.CancelScope(deadline=math.inf if timeout is None else trio.current_time() + timeout,
                                      shield=shield):
                    if not queued:
                        await self._put(cell, env, None)
                        queued = True
                    await slot.wait()
            finally:
                self._stop_waiting(ctx, cell, blocking)
        finally:
            self._slots.pop(env.message_id, None)
            if not queued:  # never reaches the actor: nobody will answer it
                self._ask_ids.discard(env.message_id)
        return self._reply_of(cell, message, slot, timeout)

    def _start_waiting(self, ctx: Context, cell: _Cell) -> bool:
        """If the asker is (part of) a handler, record that its actor now waits for ``cell``'s
        (raising :class:`AskCycleError` if that closes a cycle) and that its handler no longer
        runs (``busy``); return whether it was. :meth:`_stop_waiting` undoes it."""
        blocking = ctx._cell is not None and _in_handler(ctx._cell, handling.get())
        if blocking:
            self._graph.check_and_add(ctx.self_id, cell.id)
            self.busy -= 1
        return blocking

    def _stop_waiting(self, ctx: Context, cell: _Cell, blocking: bool) -> None:
        """Undo :meth:`_start_waiting` (``blocking``: what it returned)."""
        if blocking:
            self.busy += 1
            self._graph.remove(ctx.self_id, cell.id)

    @staticmethod
    def _reply_of(cell: _Cell, message: Message, slot: ReplySlot, timeout: float | None) -> Any:
        """What an ask returns for its ``slot``: the reply's payload, or the error it carries."""
        payload = slot.reply
        if payload is None:
            raise AskTimeoutError(cell.id, type(message).__name__, timeout or 0.0)
        if isinstance(payload, ErrorReply):
            if payload.error_type == ActorStoppedError.__name__:
                raise ActorStoppedError(cell.id, type(message).__name__)
            raise RemoteActorError(cell.id, payload.error_type, payload.error)
        if isinstance(payload, Ack):
            return None
        return payload

    def _defer(self, request: Envelope, responder: ActorId) -> PendingReply | None:
        if request.message_id not in self._ask_ids:
            return None
        self._deferred.add(request.message_id)
        return PendingReply(self, request, responder)

    def _reply(self, request: Envelope, responder: ActorId, payload: Message) -> None:
        """Answer ``request`` to whoever waits for its id."""
        self._ask_ids.discard(request.message_id)
        self._deferred.discard(request.message_id)
        slot = self._slots.get(request.message_id)
        if slot is not None and not self._hooks:
            # the asker needs only the payload: the envelope would be made for the audit alone
            slot.answer(payload)
            return
        # a reply answers (correlation) and is caused by (causation) its request
        env = self._envelope(responder, request.sender, payload, correlation_id=request.message_id,
                             causation_id=request.message_id)
        if slot is None:
            self._drop(env, f"no caller waits for correlation id {request.message_id} "
                            "(the ask timed out or was cancelled)")
            return
        slot.answer(payload)
        self._audit(AuditRecord(AuditEvent.REPLIED, env))

    async def _publish(self, ctx: Context, topic: Topic, message: Message) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        subs = self._topics.get(topic.name)
        env = self._envelope(ctx.self_id, topic, message) if subs else None
        for sub in list(subs) if subs else ():
            assert env is not None
            if isinstance(sub, _Cell):
                name = find_handler(sub.actor_cls, type(message)) if sub.actor_cls is not None else None
                if name is None and sub.actor_cls is not None:
                    # a subscriber receives the types it handles: the rest is filtered out,
                    # audited as a drop but not logged (it is no fault of anyone's)
                    self._drop(env, f"subscriber {sub.id} has no handler for {type(message).__name__}",
                               quiet=True)
                    continue
                try:
                    await self._put(sub, env, name)
                except ActorStoppedError:
                    self._drop(env, f"subscriber {sub.id} is stopped")
            else:
                try:
                    sub.send_nowait(env)
                except trio.WouldBlock:
                    await sub.send(env)
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    pass
        await trio.lowlevel.cancel_shielded_checkpoint()

    def _subscribe(self, ctx: Context, topic: Topic) -> None:
        cell = ctx._cell
        if cell is None:
            raise RuntimeError(
                f"{ctx.self_id} is not an actor; use Runtime.open_subscription() outside actors"
            )
        subs = self._topics.setdefault(topic.name, [])
        if cell not in subs:
            subs.append(cell)
            cell.topics.add(topic)

    def _unsubscribe(self, ctx: Context, topic: Topic) -> None:
        cell = ctx._cell
        subs = self._topics.get(topic.name, [])
        if cell in subs:
            subs.remove(cell)
        if cell is not None:
            cell.topics.discard(topic)

    def _audit(self, record: AuditRecord) -> None:
        for hook in self._hooks:
            try:
                hook(record)
            except Exception:  # a broken hook must not break delivery
                log.exception("audit hook %r failed", hook)

    def _drop(self, env: Envelope, reason: str, *, quiet: bool = False) -> None:
        self._dropped += 1
        (log.debug if quiet else log.warning)("dropped %s from %s to %s: %s", type(env.payload).__name__, env.sender,
                    env.recipient, reason)
        if self._hooks:
            self._audit(AuditRecord(AuditEvent.DROPPED, env, reason))
