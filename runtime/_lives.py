"""An actor's life in the runtime: its task (:func:`cell_main`), its message loop, handling
one message (:func:`handle`; :func:`handle_inline` for an inline handler, also run in a
sender's task), supervision
(restart or escalate) and what is left when it stops.

Functions of the :class:`~livecontext.runtime.Runtime` they are given, which calls them: split
from ``_runtime.py`` (routing, asks and replies) to keep each module to one concern.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from livecontext.protocol import (
    Ack,
    ActorEscalated,
    ActorRestarted,
    Envelope,
    ErrorReply,
    Message,
)

from ._actor import Actor, find_handler
from ._audit import AuditEvent, AuditRecord
from ._cell import (
    _FAIRNESS_BATCH,
    _WAKE,
    SUPERVISION_TOPIC,
    _Cell,
    _error_reply,
    _failure_of,
    _State,
)
from ._context import ActorRef, handling
from ._errors import UsageError
from ._kernel_errors import ActorStoppedError, UnhandledMessageError

if TYPE_CHECKING:
    from ._runtime import Runtime

log = logging.getLogger("livecontext.runtime")


async def cell_main(rt: Runtime, cell: _Cell, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    started = False
    cell.task = trio.lowlevel.current_task()
    # the actor's own task handles nothing yet: spawned from a handler (a tool that spawns a
    # sub-agent), it must not take that handler's message for its own (its records' sender)
    handling.set(None)
    try:
        with cell.scope:
            while True:
                cell.inline_failure = None  # (the restart answers it)
                in_on_stop = False
                try:
                    async with trio.open_nursery() as nursery:
                        cell.nursery = nursery
                        instance = cell.factory()
                        instance.ctx = cell.ctx
                        cell.instance = instance
                        cell.actor_cls = type(instance)
                        await instance.on_start()
                        if not started:
                            started = True
                            task_status.started()
                        cell.state = _State.RUNNING if cell.state is _State.STARTING else cell.state
                        await message_loop(rt, cell, instance)
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
                        log.warning("actor %s failed in on_stop: %s: %s", cell.id,
                                    type(failure).__name__, failure)
                        await escalate(rt, cell, failure)
                        return
                    if not await supervise(rt, cell, failure):
                        return
    finally:
        finish(rt, cell)


async def message_loop(rt: Runtime, cell: _Cell, instance: Actor) -> None:
    receive = cell.receive
    batch = 0
    if cell.carried is not None:
        env, cell.carried = cell.carried, None
        await handle(rt, cell, instance, env)
    while True:
        try:
            env = receive.receive_nowait()
            cell.pending -= 1
            batch += 1
            if batch >= _FAIRNESS_BATCH:
                batch = 0
                await trio.lowlevel.checkpoint()
        except trio.WouldBlock:
            batch = 0
            cell.parked = True
            try:
                env = await receive.receive()
                cell.pending -= 1
            except trio.EndOfChannel:
                raise_inline_failure(cell, None)
                return
            finally:
                cell.parked = False
        except trio.EndOfChannel:
            raise_inline_failure(cell, None)
            return
        raise_inline_failure(cell, env)
        if env is _WAKE:
            continue
        await handle(rt, cell, instance, env)


def raise_inline_failure(cell: _Cell, taken: Envelope | None) -> None:
    """Raise the failure of an inline handler run in a sender's task, if one failed, so that
    the actor restarts (``taken``, the message the loop holds, is then handled first)."""
    failure, cell.inline_failure = cell.inline_failure, None
    if failure is not None:
        if taken is not None and taken is not _WAKE:
            cell.carried = taken
        raise failure


async def handle(rt: Runtime, cell: _Cell, instance: Actor, env: Envelope) -> None:
    """Handle ``env`` with ``instance``, in the actor's task."""
    payload = env.payload
    name = find_handler(type(instance), type(payload))
    if name is None:
        err = UnhandledMessageError(cell.id, type(payload).__name__,
                                    [t.__name__ for t in type(instance).handled_types()])
        if env.message_id in rt._ask_ids:
            rt._reply(env, cell.id, ErrorReply(type(err).__name__, str(err)))
        else:
            rt._drop(env, str(err))
        return
    needed = instance.capability_for(type(payload))
    denied = needed is not None and not rt.has_capability(env.sender, needed)
    if not denied and name in type(instance)._inline:
        handle_inline(rt, cell, instance, env, name)
        return
    _delivered(rt, cell, env)
    token = handling.set((cell.id, env))
    rt.busy += 1
    try:
        if denied:
            # a denial is an answer, not a failure of the actor: no restart
            try:
                result = await instance.on_denied(payload, needed)
            except PermissionError as refused:
                result = ErrorReply(type(refused).__name__, str(refused))
                if env.message_id not in rt._ask_ids:
                    rt._drop(env, str(refused))
        else:
            result = await getattr(instance, name)(payload)
    except BaseException as exc:
        if _answer_failure(rt, cell, env, exc):
            raise
        return
    finally:
        rt.busy -= 1
        handling.reset(token)
    _answer(rt, cell, instance, env, name, result)


def handle_inline(rt: Runtime, cell: _Cell, instance: Actor, env: Envelope, name: str) -> None:
    """Handle ``env`` with the inline handler ``name`` (a plain ``def``), whose sender is
    allowed to send it, in this task: the actor's, or a sender's that found it idle."""
    _delivered(rt, cell, env)
    token = handling.set((cell.id, env))
    try:
        result = getattr(instance, name)(env.payload)
    except BaseException as exc:
        if _answer_failure(rt, cell, env, exc):
            raise
        return
    finally:
        handling.reset(token)
    _answer(rt, cell, instance, env, name, result)


def _delivered(rt: Runtime, cell: _Cell, env: Envelope) -> None:
    rt._delivered += 1
    cell.handled += 1
    if rt._hooks:
        rt._audit(AuditRecord(AuditEvent.DELIVERED, env))


def _answer(rt: Runtime, cell: _Cell, instance: Actor, env: Envelope, name: str, result: object) -> None:
    """Answer an ask with its handler's ``result`` (unless its reply is deferred or sent)."""
    if env.message_id not in rt._ask_ids or env.message_id in rt._deferred:
        return
    if result is None:
        result = Ack()
    elif not isinstance(result, Message):
        err = TypeError(f"{type(instance).__name__}.{name} returned {type(result).__name__}, not a Message")
        result = ErrorReply("TypeError", str(err))
    rt._reply(env, cell.id, result)


def _answer_failure(rt: Runtime, cell: _Cell, env: Envelope, exc: BaseException) -> bool:
    """Answer (or drop) ``env`` whose handler raised ``exc``; return whether ``exc`` is the
    actor's failure, to raise, rather than the sender's mistake (a :class:`UsageError`)."""
    is_ask = env.message_id in rt._ask_ids
    if isinstance(exc, UsageError):  # answer it, do not restart
        if is_ask:
            rt._reply(env, cell.id, ErrorReply(type(exc).__name__, str(exc)))
        else:
            rt._drop(env, f"{type(exc).__name__}: {exc}")
        return False
    if is_ask:  # the asker must hear of it now, not at its timeout
        rt._reply(env, cell.id, _error_reply(cell, env, exc))
    return True


async def supervise(rt: Runtime, cell: _Cell, failure: BaseException) -> bool:
    """Restart ``cell`` after ``failure`` (returns True) or escalate and stop it (False)."""
    policy = cell.policy
    now = trio.current_time()
    cell.failures.append(now)
    if policy is not None:
        while cell.failures and cell.failures[0] < now - policy.within_s:
            cell.failures.popleft()
    log.warning("actor %s failed: %s: %s", cell.id, type(failure).__name__, failure)
    if policy is None or len(cell.failures) > policy.max_restarts or rt._closing:
        await escalate(rt, cell, failure)
        return False
    rt._restarts += 1
    backoff = min(policy.backoff_initial_s * 2 ** (len(cell.failures) - 1), policy.backoff_max_s)
    with trio.move_on_after(1.0):  # a stuck subscriber must not stall the restart
        await rt._system.publish(SUPERVISION_TOPIC, ActorRestarted(
            cell.id, type(failure).__name__, str(failure), len(cell.failures), backoff))
    await trio.sleep(backoff)
    return cell.state is not _State.STOPPED


async def escalate(rt: Runtime, cell: _Cell, failure: BaseException) -> None:
    policy = cell.policy
    msg = ActorEscalated(cell.id, type(failure).__name__, str(failure), len(cell.failures),
                         policy.within_s if policy is not None else 0.0)
    cell.state = _State.STOPPED
    drain_dead(rt, cell)
    parent = rt._cells.get(cell.parent) if cell.parent is not None else None
    if (parent is not None and parent.state is _State.RUNNING and parent.actor_cls is not None
            and find_handler(parent.actor_cls, ActorEscalated) is not None):
        try:
            await rt._system.tell(ActorRef(parent.id, parent), msg)
            return
        except ActorStoppedError:
            pass
    rt.failures.append(msg)
    log.error("actor %s stopped after %d failures: %s", cell.id, len(cell.failures), failure)
    await rt._system.publish(SUPERVISION_TOPIC, msg)


def drain_dead(rt: Runtime, cell: _Cell) -> None:
    """Answer what is left in a dead actor's mailbox: asks get an error, tells are dropped."""
    cell.send.close()
    while True:
        if cell.carried is not None:
            env, cell.carried = cell.carried, None
        else:
            try:
                env = cell.receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
        if env is _WAKE:
            continue
        if env.message_id in rt._ask_ids:
            err = ActorStoppedError(cell.id, type(env.payload).__name__)
            rt._reply(env, cell.id, ErrorReply(type(err).__name__, str(err)))
        else:
            rt._drop(env, f"{cell.id} stopped before handling it")
    cell.receive.close()


def finish(rt: Runtime, cell: _Cell) -> None:
    cell.state = _State.STOPPED
    cell.nursery = None
    for topic in list(cell.topics):
        rt._unsubscribe(cell.ctx, topic)
    if rt._stepping is not None:
        rt._stepping._release(cell)
    drain_dead(rt, cell)
    cell.done.set()
