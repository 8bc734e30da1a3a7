"""Pending asks (reply slots) and the wait-for graph that detects ask cycles."""

from __future__ import annotations

from collections import Counter

import trio

from livecontext.protocol import ActorId, Message

from ._errors import AskCycleError


class ReplySlot:
    """One ask, from its request until it is answered: the one shape of every answer (a reply
    message, or an :class:`ErrorReply` with the exception it reports), and the task waiting for
    it, which :meth:`answer` wakes.

    The post keeps it until it is answered, also after its asker gave up (``waiting`` false),
    so that a late answer is known for one and dropped quietly.
    """

    __slots__ = ("_task", "deferred", "error", "reply", "waiting")

    def __init__(self) -> None:
        self._task: trio.lowlevel.Task | None = None
        self.reply: Message | None = None
        """The reply's payload, once it came."""
        self.error: BaseException | None = None
        """With an :class:`ErrorReply`, the exception it reports, which the asker raises from:
        in one process the exception object itself travels, not only its name and text."""
        self.waiting = True
        """Whether the asker still waits (it stops at its timeout or cancellation)."""
        self.deferred = False
        """Whether the handler deferred its answer (its return value is then no answer)."""

    def answer(self, reply: Message, error: BaseException | None = None) -> None:
        """Set the reply (and, for an error, its exception) and wake the asker, if it waits."""
        self.reply = reply
        self.error = error
        task, self._task = self._task, None
        if task is not None:
            trio.lowlevel.reschedule(task)

    async def wait(self) -> None:
        """Until the reply comes (at once, without a checkpoint, if it came already);
        cancellable."""
        if self.reply is None:
            self._task = trio.lowlevel.current_task()
            await trio.lowlevel.wait_task_rescheduled(self._abort)

    def _abort(self, _: trio.lowlevel.RaiseCancelT) -> trio.lowlevel.Abort:
        self._task = None
        return trio.lowlevel.Abort.SUCCEEDED


class WaitGraph:
    """Which actors' mailboxes are blocked waiting for which other actors.

    An edge ``a -> b`` means a handler of ``a`` is inside an ``ask`` to ``b``: ``a`` handles
    nothing else until ``b`` answers. An ask that would close a cycle is a deadlock.
    """

    def __init__(self) -> None:
        self._edges: dict[ActorId, Counter[ActorId]] = {}

    def check_and_add(self, asker: ActorId, target: ActorId) -> None:
        """Add ``asker -> target``; raise :class:`AskCycleError` if it would close a cycle."""
        path = self._path(target, asker)
        if path is not None:
            raise AskCycleError([asker, *path])
        self._edges.setdefault(asker, Counter())[target] += 1

    def remove(self, asker: ActorId, target: ActorId) -> None:
        """Remove one ``asker -> target`` edge (the ask finished)."""
        out = self._edges.get(asker)
        if out is None:
            return
        out[target] -= 1
        if out[target] <= 0:
            del out[target]
        if not out:
            del self._edges[asker]

    def _path(self, start: ActorId, goal: ActorId) -> list[ActorId] | None:
        if start == goal:
            return [goal]
        stack: list[tuple[ActorId, list[ActorId]]] = [(start, [start])]
        seen = {start}
        while stack:
            node, path = stack.pop()
            for nxt in self._edges.get(node, ()):
                if nxt == goal:
                    return [*path, goal]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
        return None
