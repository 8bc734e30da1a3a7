"""The :class:`Runtime` and the handles it gives out: :class:`Context` (a sender's way to talk)
and :class:`ActorRef` (a spawned actor).

The runtime owns the root nursery, spawns actors (each a :class:`Cell`, ``_cell.py``), routes
tells, asks and publishes to them, and stops them; envelopes, replies and the audit are its
:class:`Post`'s (``_post.py``). See docs/kernel.md for how it works and why.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable, Hashable, Iterable
from contextlib import asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import trio
from attrs import field, frozen

from livecontext.protocol.kernel import (
    Ack,
    ActorEscalated,
    ActorId,
    ActorRestarted,
    Envelope,
    ErrorReply,
    Message,
    Topic,
)

from ._asks import ReplySlot, WaitGraph
from ._audit import AuditHook
from ._clock import WALL_CLOCK, RuntimeClock
from ._cell import (
    SUPERVISION_TOPIC,
    SUPERVISOR_ID,
    Behaviour,
    Cell,
    CellState,
    RestartPolicy,
)
from ._errors import (
    ActorStoppedError,
    AskTimeoutError,
    DuplicateActorError,
    MailboxFullError,
    RemoteActorError,
    UnknownActorError,
)
from ._post import PendingReply, Post, handling

if TYPE_CHECKING:
    from ._stepping import SteppingScheduler


class Spawnable(Behaviour, Protocol):
    """An actor the runtime can spawn (:class:`Actor` is one): it is given its :class:`Context`."""

    ctx: Context


log = logging.getLogger("livecontext.runtime")
A = TypeVar("A", bound=Spawnable)
B = TypeVar("B", bound=Behaviour)

_NOTHING: frozenset[Hashable] = frozenset()
"""What an actor spawned without capabilities was granted."""

_NO_SCOPE = nullcontext()
"""What an ask without a timeout or a shield waits in: no cancel scope (the caller's apply)."""


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


@frozen
class MailboxStatistics:
    """A snapshot of one actor's mailbox (:meth:`Runtime.mailbox_statistics`)."""

    queued: int
    """Messages in the mailbox that the actor has not taken yet."""
    capacity: int
    """How many messages the mailbox holds before senders wait (backpressure)."""
    senders_waiting: int
    """Senders waiting for room: non-zero only when the mailbox is full."""


@frozen(eq=False)
class ActorRef(Generic[B]):
    """A handle to a spawned actor: pass it to ``tell``/``ask``. Compares by actor id."""

    id: ActorId
    _cell: Cell = field(repr=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActorRef) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)


Address = ActorRef[Any] | ActorId


class Runtime:
    """Owns the root nursery; spawns, routes to, supervises and stops actors.

    Make one with :func:`open_runtime`. Every actor runs in the runtime's nursery; leaving the
    ``async with`` block stops them all in an orderly way (children and later spawns first,
    each drained, then cancelled after a deadline).
    """

    def __init__(self, nursery: trio.Nursery, scheduler: SteppingScheduler | None = None,
                 *, drain_timeout: float = 2.0, clock: RuntimeClock = WALL_CLOCK) -> None:
        self._nursery = nursery
        self.clock = clock
        """Where the runtime and its actors read the time of day (envelopes' ``sent_at``,
        entries' and records' times) and their randomness by design: see :class:`RuntimeClock`."""
        self._post = Post(clock)
        self._cells: dict[ActorId, Cell] = {}
        self._order: list[ActorId] = []
        self._children: dict[ActorId, dict[ActorId, None]] = {}
        """Each parent's children, in spawn order (so stopping one needs no scan of every cell)."""
        self._clients: set[ActorId] = set()
        self._capabilities: dict[ActorId, frozenset[Hashable] | None] = {}
        self._topics: dict[str, list[Cell | trio.MemorySendChannel[Envelope]]] = {}
        """Each topic's subscribers, by the topic's name (a str hashes in C; a Topic's hash is a
        Python call, and every step of an agent asks whether its topic has listeners)."""
        self._graph = WaitGraph()
        self._stepping = scheduler
        self._drain_timeout = drain_timeout
        self._closing = False
        self.failures: list[ActorEscalated] = []
        """Escalations no parent took: actors stopped after too many failures."""
        self._restarts = 0
        if scheduler is not None:
            scheduler._attach(self._post)
        self._system = Context(self, SUPERVISOR_ID, None)

    # -- lifecycle ----------------------------------------------------------------------------

    async def spawn(
        self, factory: Callable[[], A], actor_id: ActorId | str, *, mailbox_size: int = 128,
        restart: RestartPolicy | None = RestartPolicy(), parent: ActorId | None = None,
        capabilities: Iterable[Hashable] = (),
    ) -> ActorRef[A]:
        """Start an actor and return once its :meth:`Actor.on_start` has finished.

        Args:
            factory: makes a fresh :class:`Actor` (called again at every restart).
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
        if (old is not None and old.state is not CellState.STOPPED) or aid in self._clients:
            raise DuplicateActorError(aid)
        if mailbox_size < 1:
            raise ValueError(f"mailbox_size must be >= 1 (bounded), got {mailbox_size}")
        cell = Cell(self, self._post, aid, mailbox_size, restart, parent)
        ctx = Context(self, aid, cell)

        def make() -> A:
            actor = factory()
            actor.ctx = ctx
            return actor

        self._cells[aid] = cell
        self._capabilities[aid] = frozenset(capabilities)
        if old is None:
            self._order.append(aid)
        if parent is not None:
            self._children.setdefault(parent, {})[aid] = None
        await self._nursery.start(self._run, cell, make)
        return ActorRef(aid, cell)

    async def _run(self, cell: Cell, factory: Callable[[], Behaviour],
                   task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            await cell.run(factory, task_status)
        finally:
            self._forget(cell)

    def _forget(self, cell: Cell) -> None:
        """Take ``cell``, stopping, off its topics and hand it what the stepping scheduler holds
        for it (its mailbox answers that: it is stopped)."""
        for topic in list(cell.topics):
            self._unsubscribe(cell, topic)
        if self._stepping is not None:
            self._stepping._release(cell)

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
        return cell is not None and cell.state in (CellState.RUNNING, CellState.STARTING)

    async def stop(self, actor: Address, *, drain_timeout: float | None = None) -> None:
        """Stop an actor in order: refuse new mail, handle what is queued, ``on_stop``, cancel.

        Its children stop first. After ``drain_timeout`` seconds of draining, it is cancelled.
        """
        cell = self._cell(actor)
        if cell.state is CellState.STOPPED:
            return
        for child_id in list(self._children.get(cell.id, ())):
            child = self._cells[child_id]
            if child.parent == cell.id:
                await self.stop(ActorRef(child.id, child), drain_timeout=drain_timeout)
        self._forget(cell)
        await cell.stop(self._drain_timeout if drain_timeout is None else drain_timeout)

    async def aclose(self) -> None:
        """Stop every actor, latest spawned first (so children go before parents)."""
        self._closing = True
        if self._stepping is not None:
            self._stepping._detach()
            self._stepping = None
        for aid in reversed(self._order):
            cell = self._cells[aid]
            if cell.state is not CellState.STOPPED:
                await self.stop(ActorRef(aid, cell))

    @property
    def closing(self) -> bool:
        """Whether :meth:`aclose` has begun: an actor that fails now is not restarted."""
        return self._closing

    # -- audit and statistics -------------------------------------------------------------------

    def add_audit_hook(self, hook: AuditHook) -> None:
        """Call ``hook`` with an :class:`AuditRecord` for every delivered, replied or dropped envelope."""
        self._post.hooks.append(hook)

    def remove_audit_hook(self, hook: AuditHook) -> None:
        """Stop calling ``hook``."""
        self._post.hooks.remove(hook)

    @property
    def busy(self) -> int:
        """Handlers running now (not counting those waiting in an ask)."""
        return self._post.busy

    def statistics(self) -> RuntimeStatistics:
        """Counters of the runtime so far."""
        running = sum(1 for c in self._cells.values() if c.state is not CellState.STOPPED)
        return RuntimeStatistics(
            actors_running=running, actors_stopped=len(self._cells) - running,
            delivered=self._post.delivered, dropped=self._post.dropped, pending_asks=self._post.pending_asks,
            restarts=self._restarts, escalations=len(self.failures),
        )

    def mailbox_statistics(self, actor: Address) -> MailboxStatistics:
        """How many messages wait in ``actor``'s mailbox now, and how many senders wait for room.

        A plain read, for those who watch a run (``livecontext run --live``); it changes
        nothing. Under a stepping scheduler, envelopes it holds for the actor are not in the
        mailbox yet (:attr:`SteppingScheduler.held` counts them).

        Raises:
            UnknownActorError: no actor has that id.
        """
        cell = self._cells.get(actor.id if isinstance(actor, ActorRef) else actor)
        if cell is None:
            raise UnknownActorError(actor.id if isinstance(actor, ActorRef) else actor)
        queued, capacity, waiting = cell.mailbox_counts()
        return MailboxStatistics(queued, capacity, waiting)

    def is_idle(self, actor: Address) -> bool:
        """Whether ``actor`` has nothing to do at this moment.

        True when it is running, nothing waits in its mailbox (nor, under a stepping
        scheduler, is held for it) and none of its handlers runs. A snapshot, which holds until
        the caller next yields to Trio. It lets an actor skip an ask whose answer it already
        knows, when nothing is on its way that could change that answer (see the engine's
        input pull).
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

    # -- supervision (the CellHost side of the runtime) -----------------------------------------

    async def report_restart(self, event: ActorRestarted) -> None:
        """Count an actor's restart and publish ``event`` on :data:`SUPERVISION_TOPIC` (called
        by its cell)."""
        self._restarts += 1
        await self._system.publish(SUPERVISION_TOPIC, event)

    async def report_escalation(self, parent: ActorId | None, event: ActorEscalated) -> None:
        """Tell ``parent`` that an actor stopped for good, if it is running and handles
        :class:`ActorEscalated`; otherwise keep ``event`` in :attr:`failures` and publish it
        on :data:`SUPERVISION_TOPIC` (called by the actor's cell)."""
        cell = self._cells.get(parent) if parent is not None else None
        if (cell is not None and cell.state is CellState.RUNNING and cell.actor_cls is not None
                and cell.actor_cls.handler_for(ActorEscalated) is not None):
            try:
                await self._system.tell(ActorRef(cell.id, cell), event)
                return
            except ActorStoppedError:
                pass
        self.failures.append(event)
        log.error("actor %s stopped after %d failures: %s: %s", event.actor, event.restarts,
                  event.error_type, event.error)
        await self._system.publish(SUPERVISION_TOPIC, event)

    # -- sending ----------------------------------------------------------------------------------

    def _cell(self, to: Address) -> Cell:
        if isinstance(to, ActorRef):
            known = to._cell
            if known.state is not CellState.STOPPED:
                # a cell never leaves STOPPED, and only a stopped one is replaced (see spawn):
                # one that is not stopped is its id's current cell, no lookup needed
                return known
            to = to.id
        cell = self._cells.get(to)
        if cell is None:
            raise UnknownActorError(to)
        return cell

    def _put_nowait(self, cell: Cell, env: Envelope) -> bool:
        """Put ``env`` in ``cell``'s mailbox without waiting (under a stepping scheduler: hand
        it to the scheduler, which puts it there at a step). False if the mailbox is full."""
        if self._stepping is not None:
            self._stepping._hold(cell, env)
            return True
        return cell.put_nowait(env)

    async def _put(self, cell: Cell, env: Envelope) -> None:
        """:meth:`_put_nowait`, waiting for room in a full mailbox (backpressure)."""
        if not self._put_nowait(cell, env):
            await cell.put(env)

    async def _tell(self, ctx: Context, to: Address, message: Message) -> None:
        # a checkpoint as Trio's own sends are: cancelled before, never after, it is sent
        cell = self._cell(to)
        cell.handler_for(message)  # (refused here, at the sender, if the actor cannot take it)
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._put(cell, self._post.stamp(ctx.self_id, cell.id, message))
        await trio.lowlevel.cancel_shielded_checkpoint()

    def _tell_nowait(self, ctx: Context, to: Address, message: Message) -> None:
        cell = self._cell(to)
        cell.handler_for(message)
        if not self._put_nowait(cell, self._post.stamp(ctx.self_id, cell.id, message)):
            raise MailboxFullError(cell.id, cell.mailbox_size)

    async def _ask(self, ctx: Context, to: Address, message: Message, timeout: float | None,
                   shield: bool) -> Any:
        """Ask ``to``; see :meth:`Context.ask`.

        A checkpoint as Trio's own operations are: a cancel point before the request is sent
        (unless ``shield``), and a schedule point while it waits for the reply, which it
        does recorded in the wait-for graph if a handler asks.
        """
        cell = self._cell(to)
        cell.handler_for(message)
        if not shield:
            await trio.lowlevel.checkpoint_if_cancelled()
        blocking = ctx._cell is not None and ctx._cell.in_handler()
        if blocking:  # the asker's actor now waits for cell's; its handler no longer runs
            self._graph.check_and_add(ctx.self_id, cell.id)
            self._post.busy -= 1
        env = self._post.stamp(ctx.self_id, cell.id, message)
        slot = self._post.open_ask(env)
        reached = False
        try:
            # the timeout covers the wait for room in a full mailbox too; with neither a timeout nor
            # a shield there is nothing for a cancel scope to do (it costs about a quarter of an ask)
            with (_NO_SCOPE if timeout is None and not shield else
                  trio.CancelScope(deadline=math.inf if timeout is None else trio.current_time() + timeout,
                                   shield=shield)):
                await self._put(cell, env)
                reached = True
                await slot.wait()
        finally:
            if blocking:
                self._post.busy += 1
                self._graph.remove(ctx.self_id, cell.id)
            self._post.close_ask(env, slot, reached=reached)
        return self._reply_of(cell, message, slot, timeout)

    @staticmethod
    def _reply_of(cell: Cell, message: Message, slot: ReplySlot, timeout: float | None) -> Any:
        """What an ask returns for its ``slot``: the reply's payload, or the error it carries."""
        payload = slot.reply
        if payload is None:
            raise AskTimeoutError(cell.id, type(message).__name__, timeout or 0.0)
        if isinstance(payload, ErrorReply):
            error = slot.error
            assert error is not None  # (Post.reply gives every ErrorReply its exception)
            if isinstance(error, ActorStoppedError):
                raise error
            raise RemoteActorError(cell.id, payload, error) from error
        if isinstance(payload, Ack):
            return None
        return payload

    async def _publish(self, ctx: Context, topic: Topic, message: Message) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        subs = self._topics.get(topic.name)
        env = self._post.stamp(ctx.self_id, topic, message) if subs else None
        for sub in list(subs) if subs else ():
            assert env is not None
            if isinstance(sub, Cell):
                cls = sub.actor_cls
                if cls is not None and cls.handler_for(type(message)) is None:
                    # a subscriber receives the types it handles: the rest is filtered out,
                    # audited as a drop but not logged (it is no fault of anyone's)
                    self._post.drop(env, f"subscriber {sub.id} has no handler for {type(message).__name__}",
                                    quiet=True)
                    continue
                try:
                    await self._put(sub, env)
                except ActorStoppedError:
                    self._post.drop(env, f"subscriber {sub.id} is stopped")
            else:
                try:
                    sub.send_nowait(env)
                except trio.WouldBlock:
                    await sub.send(env)
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    pass
        await trio.lowlevel.cancel_shielded_checkpoint()

    def _subscribe(self, cell: Cell, topic: Topic) -> None:
        subs = self._topics.setdefault(topic.name, [])
        if cell not in subs:
            subs.append(cell)
            cell.topics.add(topic)

    def _unsubscribe(self, cell: Cell, topic: Topic) -> None:
        subs = self._topics.get(topic.name, [])
        if cell in subs:
            subs.remove(cell)
        cell.topics.discard(topic)


class Context:
    """An actor's (or client's) way to send messages; the runtime stamps its id on each one.

    An actor gets its context as ``self.ctx``; code outside actors gets one from
    :meth:`Runtime.client`. There is no way to send with another sender id.
    """

    __slots__ = ("_cell", "runtime", "self_id")

    def __init__(self, runtime: Runtime, self_id: ActorId, cell: Cell | None) -> None:
        self.runtime = runtime
        """The runtime this context belongs to."""
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

        A checkpoint, as Trio's own sends are: a cancel point before the message is sent,
        a schedule point after.

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
        tasks run before it returns).

        If the handler raises, the ask raises :class:`RemoteActorError` *from* the handler's
        own exception: ``exc.__cause__`` is that exception (an exception group from a nursery
        in the handler keeps all it holds), and ``exc.error_class`` its class, so the asker
        tells errors apart by type::

            try:
                await ctx.ask(store, Write(entry))
            except RemoteActorError as exc:
                if not issubclass(exc.error_class, DiskFullError):
                    raise

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
            RemoteActorError: the handler raised (see above).
            ActorStoppedError: ``to`` is stopped, or stopped before it answered.
            UnhandledMessageError: as for :meth:`tell`.
        """
        return await self.runtime._ask(self, to, message, timeout, shield)

    async def publish(self, topic: Topic | str, message: Message) -> None:
        """Send ``message`` to every subscriber of ``topic`` (one envelope, shared)."""
        await self.runtime._publish(self, topic if isinstance(topic, Topic) else Topic(topic), message)

    def defer_reply(self) -> PendingReply | None:
        """Answer the ask being handled later, from another task, instead of by returning.

        Call it inside a handler; the handler's return value is then ignored, and the asker
        waits until :meth:`PendingReply.send` or :meth:`PendingReply.fail` (or its own
        timeout). Returns ``None`` when the message being handled is a ``tell`` (nobody waits
        for a reply).
        """
        now = handling.get()
        if now is None:
            raise RuntimeError("defer_reply() is only valid inside a handler")
        return self.runtime._post.defer(now[1], self.self_id)

    def subscribe(self, topic: Topic | str) -> None:
        """Deliver what is published on ``topic`` to this actor's mailbox."""
        if self._cell is None:
            raise RuntimeError(
                f"{self.self_id} is not an actor; use Runtime.open_subscription() outside actors"
            )
        self.runtime._subscribe(self._cell, topic if isinstance(topic, Topic) else Topic(topic))

    def unsubscribe(self, topic: Topic | str) -> None:
        """Stop receiving ``topic``."""
        if self._cell is not None:
            self.runtime._unsubscribe(self._cell, topic if isinstance(topic, Topic) else Topic(topic))
