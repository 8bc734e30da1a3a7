"""An actor's life in its runtime: the :class:`Cell`.

A cell owns one actor's mailbox and the task that runs it: it starts the actor, takes its
messages one at a time and hands each to its handler, in that task, answers asks, restarts the
actor after a failure or escalates it, and answers what is left in the mailbox when it stops.
Every message reaches a handler this one way: through the mailbox, then the cell's loop.

The cell knows its actor only as a :class:`Behaviour` and its runtime only as a
:class:`CellHost`, so that this module imports neither :class:`Actor` nor :class:`Runtime`.
"""

from __future__ import annotations

import collections
import enum
import logging
from collections.abc import Callable, Hashable
from typing import Protocol

import trio
from attrs import frozen

from livecontext.protocol import (
    Ack,
    ActorEscalated,
    ActorId,
    ActorRestarted,
    Envelope,
    Message,
    Topic,
)

from ._errors import ActorStoppedError, UnhandledMessageError, UsageError
from ._post import Post, handling

log = logging.getLogger("livecontext.runtime")

SUPERVISION_TOPIC = Topic("system.supervision")
"""Where the runtime publishes :class:`ActorRestarted` and :class:`ActorEscalated`."""
SUPERVISOR_ID = ActorId("system", "supervisor")
"""The sender id of the runtime's own messages."""

_FAIRNESS_BATCH = 32  # messages handled back to back before an actor yields to others


@frozen
class Handler:
    """One handler of an actor class: the method's name, and whether it is a plain ``def``."""

    name: str
    inline: bool
    """A plain ``def`` marked ``@handler(inline=True)``: called without an ``await``."""


class Behaviour(Protocol):
    """What a cell needs of the actor it runs. :class:`Actor` implements it; the kernel knows
    actors through it only (``Actor`` itself is built on the kernel's :class:`Context`)."""

    async def on_start(self) -> None: ...

    async def on_stop(self) -> None: ...

    def capability_for(self, message_type: type) -> Hashable | None: ...

    async def on_denied(self, message: Message, capability: Hashable) -> Message | None: ...

    @classmethod
    def handler_for(cls, message_type: type) -> Handler | None: ...

    @classmethod
    def handled_types(cls) -> tuple[type, ...]: ...


class CellHost(Protocol):
    """What a cell needs of its runtime (:class:`Runtime` implements it)."""

    @property
    def closing(self) -> bool:
        """Whether the runtime is closing: a failed actor is then not restarted."""
        ...

    def has_capability(self, actor: ActorId, capability: Hashable) -> bool: ...

    async def report_restart(self, event: ActorRestarted) -> None:
        """Count the restart and tell whoever listens."""
        ...

    async def report_escalation(self, parent: ActorId | None, event: ActorEscalated) -> None:
        """Hand an actor's final failure to its parent, or record and publish it."""
        ...


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


class CellState(enum.Enum):
    """Where a cell is in its life; it only moves forward (a restart stays RUNNING)."""

    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"


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


class Cell:
    """One actor's life in its runtime: mailbox, task, handling, supervision and stop."""

    def __init__(self, host: CellHost, post: Post, actor_id: ActorId, mailbox_size: int,
                 policy: RestartPolicy | None, parent: ActorId | None) -> None:
        self._host = host
        self._post = post
        self.id = actor_id
        self.mailbox_size = mailbox_size
        self._send, self._receive = trio.open_memory_channel[Envelope](mailbox_size)
        self.policy = policy
        self.parent = parent
        self.state = CellState.STARTING
        self.instance: Behaviour | None = None
        self.actor_cls: type[Behaviour] | None = None
        """The actor's class, once it started (until then a message's handler is not known)."""
        self.nursery: trio.Nursery | None = None
        """The actor's nursery, for its background tasks."""
        self.topics: set[Topic] = set()
        """What it subscribes to."""
        self.done = trio.Event()
        """Set when the cell has stopped for good."""
        self._task: trio.lowlevel.Task | None = None
        """The task running the actor's handlers (its background tasks are in ``nursery``)."""
        self._scope = trio.CancelScope()
        self._failures: collections.deque[float] = collections.deque()

    # -- what senders ask of a cell -------------------------------------------------------------------

    def is_idle(self) -> bool:
        """Whether the actor is running and has nothing to do: its loop waits on an empty
        mailbox (so none of its handlers runs, and no message was handed to it yet)."""
        return self.state is CellState.RUNNING and self._receive.statistics().tasks_waiting_receive > 0

    def handler_for(self, message: Message) -> Handler | None:
        """The handler that will take ``message`` (``None`` while the actor has not started:
        its class is not known yet).

        Raises:
            ActorStoppedError: the actor is stopping or stopped.
            UnhandledMessageError: the actor has no handler for the message's type.
        """
        if self.state is CellState.STOPPED or self.state is CellState.STOPPING:
            raise ActorStoppedError(self.id, type(message).__name__)
        cls = self.actor_cls
        if cls is None:
            return None
        found = cls.handler_for(type(message))
        if found is None:
            raise self._unhandled(cls, message)
        return found

    def in_handler(self) -> bool:
        """Whether the current task is running (part of) one of this actor's handlers.

        A handler blocks its actor's mailbox while it waits; a background task started in
        ``ctx.nursery`` does not, even though it inherits the handler's context variables.
        Tasks of a nursery the handler opened itself are part of the handler.
        """
        now = handling.get()
        if now is None or (now[0] is not self.id and now[0] != self.id):
            return False
        task = trio.lowlevel.current_task()
        while task is not self._task:
            nursery = task.parent_nursery
            if nursery is None or nursery is self.nursery:
                return False
            task = nursery.parent_task
        return True

    def has_room(self) -> bool:
        """Whether a message put now would not wait: the mailbox has room, or is closed (a put
        then fails at once)."""
        stats = self._send.statistics()
        return stats.current_buffer_used < stats.max_buffer_size or self.done.is_set()

    def mailbox_counts(self) -> tuple[int, int, int]:
        """Messages in the mailbox now, its capacity, and senders waiting for room."""
        stats = self._send.statistics()
        return stats.current_buffer_used, int(stats.max_buffer_size), stats.tasks_waiting_send

    def put_nowait(self, env: Envelope) -> bool:
        """Put ``env`` in the mailbox without waiting; False if it is full.

        Raises:
            ActorStoppedError: the mailbox is closed.
        """
        try:
            self._send.send_nowait(env)
        except trio.WouldBlock:
            return False
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise ActorStoppedError(self.id, type(env.payload).__name__) from None
        return True

    async def put(self, env: Envelope) -> None:
        """Put ``env`` in the mailbox, waiting for room (backpressure).

        Raises:
            ActorStoppedError: the mailbox is closed.
        """
        try:
            await self._send.send(env)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise ActorStoppedError(self.id, type(env.payload).__name__) from None

    async def stop(self, drain_timeout: float) -> None:
        """Refuse new mail, let the actor handle what is queued and ``on_stop``; cancel it
        after ``drain_timeout`` seconds."""
        self.state = CellState.STOPPING
        self._send.close()
        with trio.move_on_after(drain_timeout):
            await self.done.wait()
        if not self.done.is_set():
            self._scope.cancel()
            await self.done.wait()

    # -- the actor's task -------------------------------------------------------------------------------

    async def run(self, factory: Callable[[], Behaviour],
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The actor's task: start it (reporting to ``task_status`` once ``on_start`` is
        done), handle its mail until it stops, restarting it with a fresh instance from
        ``factory`` after each failure its policy allows.

        Raises:
            Exception: what ``on_start`` raised the first time.
        """
        started = False
        self._task = trio.lowlevel.current_task()
        # the actor's own task handles nothing yet: spawned from a handler (a tool that spawns a
        # sub-agent), it must not take that handler's message for its own (its records' sender)
        handling.set(None)
        try:
            with self._scope:
                while True:
                    in_on_stop = False
                    try:
                        async with trio.open_nursery() as nursery:
                            self.nursery = nursery
                            instance = factory()
                            self.instance = instance
                            self.actor_cls = type(instance)
                            await instance.on_start()
                            if not started:
                                started = True
                                task_status.started()
                            if self.state is CellState.STARTING:
                                self.state = CellState.RUNNING
                            await self._loop(instance)
                            in_on_stop = True
                            await instance.on_stop()
                            nursery.cancel_scope.cancel()
                        return
                    except BaseException as exc:
                        failure = _failure_of(exc)
                        if failure is None:
                            raise
                        if not started:  # the spawner gets on_start's own error, not a group
                            raise failure from None
                        if in_on_stop:  # the mailbox is closed and drained: nothing to restart for
                            log.warning("actor %s failed in on_stop: %s: %s", self.id,
                                        type(failure).__name__, failure)
                            await self._escalate(failure)
                            return
                        if not await self._supervise(failure):
                            return
        finally:
            self.state = CellState.STOPPED
            self.nursery = None
            self._drain()
            self.done.set()

    async def _loop(self, instance: Behaviour) -> None:
        """Handle the mailbox's messages, one at a time, until it is closed and empty."""
        receive = self._receive
        batch = 0
        while True:
            try:
                env = receive.receive_nowait()
                batch += 1
                if batch >= _FAIRNESS_BATCH:
                    batch = 0
                    await trio.lowlevel.checkpoint()
            except trio.WouldBlock:
                batch = 0
                try:
                    env = await receive.receive()
                except trio.EndOfChannel:
                    return
            except trio.EndOfChannel:
                return
            await self._handle(instance, env)

    # -- handling one message ------------------------------------------------------------------------

    async def _handle(self, instance: Behaviour, env: Envelope) -> None:
        """Handle ``env`` in the actor's task: with its handler, or with ``on_denied`` if the
        sender lacks the capability the handler needs (a denial is an answer, not a failure)."""
        payload = env.payload
        handler = type(instance).handler_for(type(payload))
        if handler is None:
            unhandled = self._unhandled(type(instance), payload)
            self._post.refuse(env, self.id, unhandled, str(unhandled))
            return
        needed = instance.capability_for(type(payload))
        denied = needed is not None and not self._host.has_capability(env.sender, needed)
        post = self._post
        post.handed_over(env)
        token = handling.set((self.id, env))
        post.busy += 1
        try:
            if denied:
                try:
                    result = await instance.on_denied(payload, needed)
                except PermissionError as refused:
                    post.refuse(env, self.id, refused, str(refused))
                    return
            elif handler.inline:  # a plain def: nothing to await
                result = getattr(instance, handler.name)(payload)
            else:
                result = await getattr(instance, handler.name)(payload)
        except BaseException as exc:
            if self._answer_failure(env, exc):
                raise
            return
        finally:
            post.busy -= 1
            handling.reset(token)
        self._answer(instance, env, handler, result)

    def _answer(self, instance: Behaviour, env: Envelope, handler: Handler, result: object) -> None:
        """Answer an ask with its handler's ``result`` (unless its reply is deferred or sent)."""
        if not self._post.awaits_return(env):
            return
        if result is None:
            self._post.reply(env, self.id, Ack())
        elif isinstance(result, Message):
            self._post.reply(env, self.id, result)
        else:
            self._post.reply_error(env, self.id, TypeError(
                f"{type(instance).__name__}.{handler.name} returned {type(result).__name__}, not a Message"))

    def _answer_failure(self, env: Envelope, exc: BaseException) -> bool:
        """Answer (or drop) ``env`` whose handler raised ``exc``; return whether ``exc`` is the
        actor's failure, to raise, rather than the sender's mistake (a :class:`UsageError`)."""
        if isinstance(exc, UsageError):  # answer it, do not restart
            self._post.refuse(env, self.id, exc)
            return False
        if not self._post.is_ask(env):
            return True
        # the asker must hear of it now, not at its timeout
        if not isinstance(exc, trio.Cancelled):
            self._post.reply_error(env, self.id, exc)
        elif self.state is CellState.STOPPING or self.state is CellState.STOPPED:
            self._post.reply_error(env, self.id, ActorStoppedError(self.id, type(env.payload).__name__))
        else:
            self._post.reply_error(env, self.id, exc, "the handler was cancelled before it answered: the actor "
                                                      "failed in a background task (it restarts) or is being stopped")
        return True

    def _unhandled(self, cls: type[Behaviour], message: Message) -> UnhandledMessageError:
        return UnhandledMessageError(self.id, type(message).__name__, [t.__name__ for t in cls.handled_types()])

    # -- supervision and the end ------------------------------------------------------------------

    async def _supervise(self, failure: BaseException) -> bool:
        """Restart after ``failure`` (returns True) or escalate and stop (False)."""
        policy = self.policy
        now = trio.current_time()
        self._failures.append(now)
        if policy is not None:
            while self._failures and self._failures[0] < now - policy.within_s:
                self._failures.popleft()
        log.warning("actor %s failed: %s: %s", self.id, type(failure).__name__, failure)
        if policy is None or len(self._failures) > policy.max_restarts or self._host.closing:
            await self._escalate(failure)
            return False
        backoff = min(policy.backoff_initial_s * 2 ** (len(self._failures) - 1), policy.backoff_max_s)
        with trio.move_on_after(1.0):  # a stuck subscriber must not stall the restart
            await self._host.report_restart(ActorRestarted(
                self.id, type(failure).__name__, str(failure), len(self._failures), backoff))
        await trio.sleep(backoff)
        return self.state is not CellState.STOPPED

    async def _escalate(self, failure: BaseException) -> None:
        """Stop for good after ``failure`` and hand it to the parent (or the runtime)."""
        policy = self.policy
        event = ActorEscalated(self.id, type(failure).__name__, str(failure), len(self._failures),
                               policy.within_s if policy is not None else 0.0)
        self.state = CellState.STOPPED
        self._drain()
        await self._host.report_escalation(self.parent, event)

    def _drain(self) -> None:
        """Close the mailbox and answer what is left in it: asks get an error, tells are dropped."""
        self._send.close()
        while True:
            try:
                env = self._receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
            self._post.refuse(env, self.id, ActorStoppedError(self.id, type(env.payload).__name__),
                              f"{self.id} stopped before handling it")
        self._receive.close()
