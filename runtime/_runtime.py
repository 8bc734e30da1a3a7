"""The :class:`Runtime`: owns the root nursery, spawns, routes, supervises and stops actors.

Routing, asks and replies live here; an actor's own life (its task, message loop, handling one
message, supervision) in ``_lives.py``, its record in ``_cell.py``, and :func:`open_runtime`
in ``_open.py``.

Two departures from DESIGN.md's kernel, both for speed and both invisible to an actor's
handlers: an ask for a brief (``@handler(inline=True)``) handler that finds the actor idle
runs the handler in the asker's task rather than through the mailbox channel (the request is
still an envelope, audited and capability-checked; the actor still handles one message at a
time, in mailbox order), as does a tell or publish to such a handler with no ``await`` in it
(or whose actor vouches that this call reaches none, ``Actor.completes_at_once``, for asks);
and a reply is made into an envelope only when an audit hook is
installed (the asker needs only its payload). See :meth:`Runtime._run_inline`. An ask whose
handler never yields (:meth:`Runtime._ask`) is answered into its asker's slot without
being registered by id (so its envelope's id, made lazily by ``Envelope.stamped``, is mostly
never formatted), and what such a handler handles is kept in ``Runtime._now`` rather than in
the ``handling`` context variable (:meth:`Runtime._run_now`); a task it starts still gets it
there (``_PassOn``, a Trio instrument told of every task spawned while a runtime is open).

What an asker does see: an inline ask is a cancel point, but a schedule point only once every
``_FAIRNESS_BATCH`` inline asks (see :meth:`Runtime._inline_checkpoint`), where Trio's own
functions are both each time. Code that counted on an ask to let another task run first (a
background worker, say) must yield itself or wait for what it needs.
"""

from __future__ import annotations

import logging
import math
import random
import time
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Hashable, Iterable
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
    _FAIRNESS_BATCH,
    _STOPPED,
    _STOPPING,
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
from ._lives import cell_main, handle

if TYPE_CHECKING:
    from ._stepping import SteppingScheduler

log = logging.getLogger("livecontext.runtime")
A = TypeVar("A", bound=Actor)

_NOTHING: frozenset[Hashable] = frozenset()
"""What an actor spawned without capabilities was granted."""
# bound once: every envelope calls them (module attribute lookups showed in profiles)
_time_ns, _monotonic_ns = time.time_ns, time.monotonic_ns
_stamped = Envelope.stamped


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
        self._now: tuple[ActorId, Envelope] | None = None
        """While a never-yielding handler runs (:meth:`_run_now`): its actor and envelope, which
        every reader of ``handling`` sees instead (see :meth:`_current`)."""
        self._answering: ReplySlot | None = None
        """While ``_now``'s handler answers an ask at once: the asker's slot (see :meth:`_ask`)."""
        self._ask_ids: set[str] = set()
        self._deferred: set[str] = set()
        self._graph = WaitGraph()
        self._hooks: list[AuditHook] = []
        self._node = random.getrandbits(16)
        self._id_template = message_id_template(self._node)
        self._counter = 0
        self._unyielded = 0  # inline asks since one last yielded (see _inline_checkpoint)
        self._last_ns = 0
        self._stepping = scheduler
        self._inline = inline_asks and scheduler is None
        """Whether an ask to an idle actor may run its handler in the asker's task."""
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

        Its children stop first. After ``drain_timeout`` seconds of draining, it is cancelled;
        an inline handler running in an asker's task is not, and ``stop`` returns once it has.
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
        # an inline handler, in an asker's task, is not cancelled: wait for it (unless it is
        # the one stopping its own actor)
        while cell.inline is not None and cell.inline_task is not trio.lowlevel.current_task():
            await cell.inline.wait()

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
        scheduler, is held for it) and none of its handlers runs, in its own task or inline in
        an asker's. A snapshot, which holds until the caller next yields to Trio. It lets an actor
        skip an ask whose answer it already knows, when nothing is on its way that could
        change that answer (see the engine's input pull).
        """
        cell = self._cells.get(actor.id if isinstance(actor, ActorRef) else actor)
        if cell is None or not cell.can_run_inline():
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
        now_ns = _time_ns()
        if now_ns < self._last_ns:
            now_ns = self._last_ns
        self._last_ns = now_ns
        if causation_id is None:
            cause = self._now
            if cause is None:
                cause = handling.get()
            causation_id = cause[1].message_id if cause is not None else None
        return _stamped(self._id_template, self._counter, sender, recipient, now_ns, _monotonic_ns(),
                        payload, correlation_id, causation_id)

    def _cell(self, to: Address) -> _Cell:
        if isinstance(to, ActorRef):
            known = to._cell
            if known.state is not _STOPPED:
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
        if cell.state is _STOPPED or cell.state is _STOPPING:
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

    async def _enqueue(self, cell: _Cell, env: Envelope) -> None:
        if self._stepping is not None:
            self._stepping._hold(cell, env)
            await trio.lowlevel.checkpoint()
            return
        cell.pending += 1
        try:
            cell.send.send_nowait(env)
        except trio.WouldBlock:
            try:
                await cell.send.send(env)
            except BaseException as exc:
                cell.pending -= 1
                if isinstance(exc, (trio.ClosedResourceError, trio.BrokenResourceError)):
                    raise ActorStoppedError(cell.id, type(env.payload).__name__) from None
                raise
            return
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            cell.pending -= 1
            raise ActorStoppedError(cell.id, type(env.payload).__name__) from None
        await trio.lowlevel.checkpoint_if_cancelled()

    async def _tell(self, ctx: Context, to: Address, message: Message) -> None:
        cell, name = self._target(to, message)
        await self._deliver(cell, self._envelope(ctx.self_id, cell.id, message), name)

    async def _deliver(self, cell: _Cell, env: Envelope, name: str | None) -> None:
        """Put a told or published envelope in ``cell``'s mailbox, or handle it at once (see
        :meth:`_told_at_once`); ``name``: its handler, if known."""
        if not self._told_at_once(cell, env, name):
            await self._enqueue(cell, env)
            return
        await trio.lowlevel.checkpoint_if_cancelled()

    def _told_at_once(self, cell: _Cell, env: Envelope, name: str | None) -> bool:
        """Handle a told or published envelope now, in the sender's task, if that is the same
        as handling it from the mailbox; return whether it was.

        That holds when the actor is idle (so it would be the next message handled) and its
        handler (``name``) is an inline one that never yields (no ``await``): it runs to its
        end before anything else does, and cannot wait, ask or be cancelled meanwhile. That
        saves the task switch a tell costs (a history change told to each analyzer, input
        told to the engine).
        """
        instance = cell.instance
        if (name is not None and instance is not None and self._inline and cell.can_run_inline()
                and name in type(instance)._inline_unawaiting
                and not self._handler_may_yield(instance, name, env.payload, env.sender)):
            if self._run_now(cell, instance, env, name) is not None:  # pragma: no cover
                raise AssertionError(f"{cell.id}: {name} has no await, yet it suspended")
            return True
        return False

    def _tell_nowait(self, ctx: Context, to: Address, message: Message) -> None:
        cell, name = self._target(to, message)
        env = self._envelope(ctx.self_id, cell.id, message)
        if self._told_at_once(cell, env, name):
            return
        if self._stepping is not None:
            self._stepping._hold(cell, env)
            return
        try:
            cell.send.send_nowait(env)
        except trio.WouldBlock:
            raise MailboxFullError(cell.id, cell.mailbox_size) from None
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise ActorStoppedError(cell.id, type(message).__name__) from None
        cell.pending += 1

    async def _ask(self, ctx: Context, to: Address, message: Message, timeout: float | None,
                   shield: bool = False) -> Any:
        """Ask ``to``; see :meth:`Context.ask`.

        Most of an agent's asks go to an idle actor whose inline handler never yields (see
        :meth:`_handler_may_yield`): the handler runs here and now (:meth:`_run_now`) and mostly
        answers before it returns, so the ask is over before any other task could see it.
        There is no wait to record in the wait-for graph, nor a cycle to find (an idle actor's
        handlers wait for nobody), ``busy`` would be put back as it was, and the reply goes
        straight to the slot: the ask is registered by its id (which is then formatted, see
        ``Envelope.stamped``) only if the handler defers its reply (see :meth:`_defer`). Only
        a deferred reply, or a handler that suspended after all, is waited for, by
        :meth:`_ask_unfinished`, which does that bookkeeping then. (Written out here rather
        than in a coroutine of its own: one frame less for the commonest message.)
        """
        cell, name = self._target(to, message)
        instance = cell.instance
        if (name is not None and instance is not None and self._inline and cell.can_run_inline()
                and name in type(instance)._inline):
            if self._handler_may_yield(instance, name, message, ctx.self_id):
                return await self._ask_waiting(ctx, cell, message, timeout, shield, instance, name)
            env = self._envelope(ctx.self_id, cell.id, message)
            slot = ReplySlot(cell.id)
            suspended = self._run_now(cell, instance, env, name, slot)
            if suspended is not None or slot.reply is None:
                await self._ask_unfinished(ctx, cell, instance, env, name, slot, suspended, timeout, shield)
            else:
                await self._inline_checkpoint(shield)
            return self._reply_of(cell, message, slot, timeout)
        return await self._ask_waiting(ctx, cell, message, timeout, shield)

    async def _ask_unfinished(self, ctx: Context, cell: _Cell, instance: Actor, env: Envelope,
                              name: str, slot: ReplySlot,
                              suspended: tuple[Coroutine[Any, Any, None], Any] | None,
                              timeout: float | None, shield: bool) -> None:
        """Finish an ask answered at once (see :meth:`_ask`) that is left waiting: the handler suspended (a
        broken ``completes_at_once`` promise), or its reply was deferred."""
        self._register(env, slot)  # (if it is not yet: a handler that suspended may defer later)
        # (it cannot close a cycle: the actor was idle; but others must see the wait. The
        # handler ran with what it handles in `_now`: `handling` is still the asker's)
        blocking = self._start_waiting(ctx, cell)
        try:
            if suspended is not None:
                await self._finish_suspended(cell, instance, env, name, suspended)
            # no time passed for Trio while the handler ran: the ask's time is taken after it
            if slot.reply is None:  # a deferred reply: wait for it, the timeout counted from the ask
                await self._wait_reply(slot, trio.current_time() + timeout if timeout is not None else math.inf,
                                       shield)
            else:
                await self._inline_checkpoint(shield)
        finally:
            self._stop_waiting(ctx, cell, blocking)
            self._slots.pop(env.message_id, None)

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

    async def _ask_waiting(self, ctx: Context, cell: _Cell, message: Message, timeout: float | None,
                           shield: bool, instance: Actor | None = None, name: str | None = None) -> Any:
        """An ask whose asker waits: through the mailbox, or (given ``instance`` and ``name``)
        for an inline handler that may yield, run in this task by :meth:`_run_inline`."""
        env = self._envelope(ctx.self_id, cell.id, message)
        blocking = self._start_waiting(ctx, cell)
        slot = ReplySlot(cell.id)
        self._slots[env.message_id] = slot
        self._ask_ids.add(env.message_id)
        queued = False
        try:
            if instance is not None and name is not None:
                queued = True
                # the asker's cancel cannot cut the handler short (it is shielded): a shielded
                # ask needs no scope of its own here
                asked_at = trio.current_time()
                await self._run_inline(cell, instance, env, name)
                if slot.reply is None:  # a deferred reply: wait for it, the timeout counted from the ask
                    await self._wait_reply(slot, asked_at + timeout if timeout is not None else math.inf, shield)
                else:
                    await self._inline_checkpoint(shield)
            else:
                # the timeout covers the wait for room in a full mailbox too
                # a bare CancelScope (move_on_after's wrapper showed up in profiles), none without a
                # timeout unless shielded; a shielded scope's own deadline still cancels it
                if timeout is None and not shield:
                    await self._enqueue(cell, env)
                    queued = True
                    await slot.wait()
                else:
                    with trio.CancelScope(deadline=trio.current_time() + timeout if timeout is not None else math.inf,
                                          shield=shield):
                        await self._enqueue(cell, env)
                        queued = True
                        await slot.wait()
        finally:
            self._stop_waiting(ctx, cell, blocking)
            self._slots.pop(env.message_id, None)
            if not queued:  # never reaches the actor: nobody will answer it
                self._ask_ids.discard(env.message_id)
        return self._reply_of(cell, message, slot, timeout)

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

    async def _inline_checkpoint(self, shield: bool) -> None:
        """The end of an inline ask: a cancel point (unless ``shield``), and a schedule point
        once every ``_FAIRNESS_BATCH`` inline asks.

        An ask through the mailbox yields by nature (the asker waits for the actor's task); an
        inline one would not. Yielding at each one cost a trip through Trio's scheduler per ask,
        a fifth of an agent's turn; yielding at every ``_FAIRNESS_BATCH``-th still bounds how
        long any task can run inline asks before others get the CPU (as the message loop's
        batch does for mailboxes).
        """
        self._unyielded += 1
        if self._unyielded >= _FAIRNESS_BATCH:
            self._unyielded = 0
            if shield:
                await trio.lowlevel.cancel_shielded_checkpoint()
            else:
                await trio.lowlevel.checkpoint()
        elif not shield:
            await trio.lowlevel.checkpoint_if_cancelled()

    @staticmethod
    async def _wait_reply(slot: ReplySlot, deadline: float, shield: bool = False) -> None:
        if deadline == math.inf and not shield:
            await slot.wait()
            return
        with trio.CancelScope(deadline=deadline, shield=shield):
            await slot.wait()

    def _handler_may_yield(self, instance: Actor, name: str, payload: Message, sender: ActorId) -> bool:
        """Whether handling ``payload`` from ``sender`` with ``instance``'s inline handler
        ``name`` may yield to Trio (see ``Actor._inline_unawaiting``); if not, it needs no shield."""
        cls = type(instance)
        if name not in cls._inline_unawaiting and not (
                cls._promises_completion and instance.completes_at_once(payload)):
            return True
        if cls._denial_unawaiting:
            return False
        needed = instance.capability_for(type(payload))  # on_denied may run instead
        return needed is not None and not self.has_capability(sender, needed)

    def _run_now(self, cell: _Cell, instance: Actor, env: Envelope, name: str,
                 slot: ReplySlot | None = None) -> tuple[Coroutine[Any, Any, None], Any] | None:
        """:meth:`_run_inline` for a handler that never yields (see :meth:`_handler_may_yield`),
        run to its end here and now: its coroutine finishes at the first ``send``.

        When the actor's ``on_denied`` may yield, :meth:`_handler_may_yield` has found the
        sender allowed already: the handler is not asked again (``granted``).

        No other task runs until it returns, so nothing can see it running: the loop needs no
        event to wait on and no task of record, and there is no cancel point to shield. Being
        synchronous, it serves ``tell_nowait`` too. ``slot``: for an ask, where the reply goes.

        Returns ``None``, or, if the handler suspended after all (only a wrong
        :meth:`Actor.completes_at_once` can make it), its coroutine and what it yielded, for
        :meth:`_finish_suspended`.
        """
        # what it handles is kept in `_now` rather than in the context variable: with no other
        # task running meanwhile, nobody can tell, and setting and resetting the variable was
        # ~2% of an agent's time (see _current; a task it starts gets it from _PassOn)
        outer, outer_slot = self._now, self._answering
        self._now, self._answering = (cell.id, env), slot
        coro = handle(self, cell, instance, env, name, not type(instance)._denial_unawaiting, slot, True)
        try:
            trap = coro.send(None)
        except StopIteration:
            return None
        except BaseException as exc:
            if _failure_of(exc) is None:
                raise
            self._inline_failed(cell, exc)
            return None
        finally:
            self._now, self._answering = outer, outer_slot
        return coro, trap

    def _current(self) -> tuple[ActorId, Envelope] | None:
        """The actor whose handler runs now and the envelope it handles, or None: ``handling``,
        or ``_now`` while a never-yielding handler runs (:meth:`_run_now`)."""
        now = self._now
        return now if now is not None else handling.get()

    async def _finish_suspended(self, cell: _Cell, instance: Actor, env: Envelope, name: str,
                                suspended: tuple[Coroutine[Any, Any, None], Any]) -> None:
        """Finish a handler that :meth:`_run_now` found suspended, as :meth:`_run_inline` would
        but unshielded (a scope entered now would not nest around the handler's own), and log
        the broken promise: the actor's ``completes_at_once`` said it would not suspend.

        Other tasks run while it waits, so what it handles (``env``) goes in ``handling``, in
        this task, as for any handler."""
        log.error("%s.%s suspended although completes_at_once() said it would not: it ran "
                  "unshielded from its asker's cancellation; make completes_at_once() answer "
                  "False for this case", type(instance).__name__, name)
        # (marked running only now: nothing else ran since it started, so it is as if it was then)
        token = handling.set((cell.id, env))
        try:
            await self._as_inline(cell, _resume(*suspended))
        finally:
            handling.reset(token)

    async def _as_inline(self, cell: _Cell, handling: Awaitable[None]) -> None:
        """Await ``handling``, the run of one of ``cell``'s inline handlers, in this task: the
        actor's loop waits on ``cell.inline`` meanwhile, and a failure is raised in that loop
        (see :meth:`_inline_failed`) rather than here."""
        done = cell.inline = trio.Event()
        cell.inline_task = trio.lowlevel.current_task()
        try:
            await handling
        except BaseException as exc:
            if _failure_of(exc) is None:
                raise
            self._inline_failed(cell, exc)
        finally:
            cell.inline = None
            cell.inline_task = None
            done.set()

    @staticmethod
    def _inline_failed(cell: _Cell, exc: BaseException) -> None:
        """An inline handler failed with ``exc``: the actor's loop raises it (and restarts)."""
        cell.inline_failure = exc
        if cell.parked and not cell.pending:  # wake the loop so that it raises it now
            cell.pending += 1
            try:
                cell.send.send_nowait(_WAKE)
            except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
                cell.pending -= 1

    async def _run_inline(self, cell: _Cell, instance: Actor, env: Envelope, name: str) -> None:
        """Run an inline handler (``@handler(inline=True)``) that may yield in the asker's task.

        Taken only when the target's loop is parked on an empty mailbox, so the ask would be
        the next message it handles anyway: the actor still handles one message at a time
        (its loop waits while this runs), in mailbox order (nothing was queued before it).
        What changes is only which task runs the handler, which saves the two task switches
        and the channel round trip of an ask. The handler is shielded from the asker's
        cancellation, as it is in the actor's own task (an asker's timeout or cancel never
        cuts a handler short; it applies once the handler returns); a failure is answered to
        the asker and then raised in the actor's loop, so supervision restarts it as usual.
        A handler that never yields runs through :meth:`_run_now` instead: with no
        cancel point there is nothing to shield it from, and no other task to see it run.
        """
        await self._as_inline(cell, self._handle_shielded(cell, instance, env, name))

    async def _handle_shielded(self, cell: _Cell, instance: Actor, env: Envelope, name: str) -> None:
        with trio.CancelScope(shield=True):
            await handle(self, cell, instance, env, name)

    def _register(self, request: Envelope, slot: ReplySlot) -> None:
        """Make an ask answered at once (see :meth:`_ask`) findable by its id, as an
        ask through the mailbox is: for a reply sent later (:meth:`_defer`)."""
        if not slot.registered:
            slot.registered = True
            self._slots[request.message_id] = slot
            self._ask_ids.add(request.message_id)

    def _defer(self, request: Envelope, responder: ActorId) -> PendingReply | None:
        now, answering = self._now, self._answering
        if answering is not None and now is not None and now[1] is request:
            self._register(request, answering)
        elif request.message_id not in self._ask_ids:
            return None
        self._deferred.add(request.message_id)
        return PendingReply(self, request, responder)

    def _reply(self, request: Envelope, responder: ActorId, payload: Message,
               slot: ReplySlot | None = None) -> None:
        """Answer ``request``: to ``slot`` (an ask answered at once, not registered), or to
        whoever waits for its id."""
        if slot is None or slot.registered:
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
        subs = self._topics.get(topic.name)
        if not subs:
            await trio.lowlevel.checkpoint_if_cancelled()
            return
        env = self._envelope(ctx.self_id, topic, message)
        for sub in list(subs):
            if isinstance(sub, _Cell):
                name = find_handler(sub.actor_cls, type(message)) if sub.actor_cls is not None else None
                if name is None and sub.actor_cls is not None:
                    # a subscriber receives the types it handles: the rest is filtered out,
                    # audited as a drop but not logged (it is no fault of anyone's)
                    self._drop(env, f"subscriber {sub.id} has no handler for {type(message).__name__}",
                               quiet=True)
                    continue
                try:
                    await self._deliver(sub, env, name)
                except ActorStoppedError:
                    self._drop(env, f"subscriber {sub.id} is stopped")
            else:
                try:
                    sub.send_nowait(env)
                except trio.WouldBlock:
                    await sub.send(env)
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    pass
        await trio.lowlevel.checkpoint_if_cancelled()

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

@types.coroutine
def _resume(coro: Coroutine[Any, Any, None], trap: Any) -> Generator[Any, Any, None]:
    """Carry on a coroutine that was started by hand (``send``) and yielded ``trap`` to Trio:
    pass what Trio sends or throws back to it, and its next traps to Trio, until it ends."""
    while True:
        try:
            value = yield trap
        except BaseException as exc:
            try:
                trap = coro.throw(exc)
            except StopIteration:
                return
        else:
            try:
                trap = coro.send(value)
            except StopIteration:
                return
