"""The stepping scheduler: hold every envelope, deliver one per ``step()`` in a seeded order."""

from __future__ import annotations

import collections
import math
import random
from typing import TYPE_CHECKING

import trio
from attrs import frozen

from livecontext.protocol.kernel import Envelope

from ._errors import ActorError, ActorStoppedError

if TYPE_CHECKING:
    from ._cell import Cell
    from ._post import Post


class StallError(ActorError):
    """A stepping run had nothing to deliver while its scenario still waited: a deadlock."""

    __module__ = "livecontext.runtime.testing"  # (raised by its driver; named where users import it)


class _Quiet:
    """How long a stepping run has gone with nothing happening, on the Trio run's clock.

    Something happens when an envelope is delivered, a handler finishes, or a deadline of the
    run passes (a sleep ends, a timeout fires: a model's latency, a tool's delay, a backoff).
    While the run waits, :meth:`wait` lets time pass: straight to the next deadline under a
    virtual clock (a ``MockClock`` that only jumps: time moves only when every task waits, so
    polling would cost a loop per jump), by short polls under a real one.
    """

    __slots__ = ("limit", "since", "_virtual")

    def __init__(self, limit: float) -> None:
        self.limit = limit
        """Seconds with nothing happening after which the run has stalled."""
        self.since = trio.current_time()
        """When something last happened."""
        self._virtual = _virtual_time()

    def reset(self) -> None:
        """Something happened now."""
        self.since = trio.current_time()

    async def wait(self, poll: float) -> bool:
        """Let time pass while nothing can be delivered; ``False`` once nothing has happened
        for ``limit`` seconds (the run has stalled).

        A deadline within the limit is waited for, and passing it restarts the count: the
        stall timeout bounds each quiet stretch (the longest single wait), not the run.
        """
        now = trio.current_time()
        end = self.since + self.limit
        # (the caller holds no deadline of its own here: every one counted is another task's)
        nearest = now + trio.lowlevel.current_statistics().seconds_to_next_deadline
        if nearest <= end and not math.isinf(nearest):
            await trio.sleep_until(nearest if self._virtual else min(nearest, now + poll))
            if trio.current_time() >= nearest:
                self.reset()
            return True
        if now >= end:
            return False
        # nothing is due before the limit: under a virtual clock, jump to it (only work in
        # threads could still happen meanwhile, and a MockClock does not wait for threads)
        await trio.sleep_until(end if self._virtual and not math.isinf(end) else min(end, now + poll))
        return True


def _virtual_time() -> bool:
    """Whether the Trio run's clock is virtual: a ``MockClock`` whose time moves only by jumps
    (``rate`` 0; ``autojump_threshold`` makes it jump when every task waits)."""
    import trio.testing  # (here: it imports pytest's machinery, a tenth of a second the CLI need not pay)

    clock = trio.lowlevel.current_clock()
    return isinstance(clock, trio.testing.MockClock) and clock.rate == 0


@frozen
class Delivery:
    """One delivery made by :meth:`SteppingScheduler.step`, in a form that compares across runs.

    Message ids hold wall-clock time, so a trace names each envelope by its sender, its
    recipient and its rank among the envelopes held from that sender to that recipient instead
    (a per-pair count does not depend on how trio happened to order the sender's own tasks).
    """

    step: int
    """1 for the first delivery of the run."""
    sender: str
    """The sender's id, ``kind/name``."""
    recipient: str
    """The recipient actor's id, ``kind/name``."""
    sender_seq: int
    """1 for the first envelope held from this sender to this recipient, 2 for the next, ..."""
    message_type: str
    """The payload's class name."""


class SteppingScheduler:
    """Holds every envelope sent in its runtime; :meth:`step` delivers one, chosen by a seeded RNG.

    Order is kept between one sender and one recipient (as in live mode); which of the
    deliverable envelopes goes next is the RNG's choice among them, sorted canonically. The
    same seed therefore gives the same sequence of deliveries and the same outcome; different
    seeds explore different interleavings.

    After each delivery, :meth:`step` waits until every task is blocked and no handler runs,
    so the consequences of one delivery are complete before the next.
    Pass it to :func:`open_runtime`; see :mod:`livecontext.runtime.testing` for helpers.
    """

    def __init__(self, seed: int, *, max_held: int = 100_000) -> None:
        self.seed = seed
        self._rng = random.Random(seed)
        self._max_held = max_held
        self._held: dict[tuple[str, str], collections.deque[tuple[Cell, Envelope, int]]] = {}
        self._sender_seq: collections.Counter[tuple[str, str]] = collections.Counter()
        self._post: Post | None = None
        """The post of the runtime it drives (it reads how many handlers run)."""
        self.trace: list[Delivery] = []
        """Every delivery so far, in order."""

    @property
    def held(self) -> int:
        """How many envelopes wait for a step."""
        return sum(len(q) for q in self._held.values())

    def _check_free(self) -> None:
        if self._post is not None:
            raise RuntimeError("a SteppingScheduler drives one runtime; make a new one per runtime")

    def _attach(self, post: Post) -> None:
        self._check_free()
        self._post = post

    def _hold(self, cell: Cell, env: Envelope) -> None:
        if self.held >= self._max_held:
            raise RuntimeError(
                f"the stepping scheduler holds {self._max_held} envelopes: call step() "
                "(or run_until_idle()) to deliver them"
            )
        key = (str(env.sender), str(cell.id))
        self._sender_seq[key] += 1
        self._held.setdefault(key, collections.deque()).append((cell, env, self._sender_seq[key]))

    def _holds_for(self, cell: Cell) -> bool:
        """Whether an envelope for ``cell`` is held (not yet delivered)."""
        name = str(cell.id)
        return any(key[1] == name for key in self._held)

    def _deliverable(self) -> list[tuple[tuple[str, str], int]]:
        out = []
        for key, queue in self._held.items():
            cell, _env, seq = queue[0]
            if cell.has_room():
                out.append((key, seq))
        out.sort()
        return out

    async def step(self) -> Delivery | None:
        """Deliver one held envelope (the RNG picks which) and wait for its effects to settle.

        Returns:
            What was delivered, or ``None`` if nothing was deliverable.
        """
        return await self._step(None)

    async def _step(self, quiet: _Quiet | None) -> Delivery | None:
        """:meth:`step`; with ``quiet``, raise :class:`StallError` if a handler runs with
        nothing happening for longer than its limit."""
        await self._settle(quiet)
        candidates = self._deliverable()
        if not candidates:
            return None
        key, _ = candidates[self._rng.randrange(len(candidates))]
        queue = self._held[key]
        cell, env, seq = queue.popleft()
        if not queue:
            del self._held[key]
        self._deliver(cell, env)
        record = Delivery(len(self.trace) + 1, key[0], key[1], seq, type(env.payload).__name__)
        self.trace.append(record)
        if quiet is not None:
            quiet.reset()
        await self._settle(quiet)
        return record

    async def run_until_idle(self, max_steps: int = 100_000) -> int:
        """Step until nothing is deliverable; return the number of steps.

        Raises:
            RuntimeError: still busy after ``max_steps`` (a livelock, or raise the limit).
        """
        for n in range(max_steps):
            if await self.step() is None:
                return n
        raise RuntimeError(f"still delivering after {max_steps} steps; raise max_steps or look for a message loop")

    async def settle(self) -> None:
        """Wait until every other task is blocked and no handler is running.

        A handler that waits on Trio's clock (a model's latency, a tool's delay) is waited
        for: under a virtual clock (``trio.testing.MockClock``) its time passes at once.
        """
        await self._settle(None)

    async def _settle(self, quiet: _Quiet | None) -> None:
        import trio.testing  # (here: it imports pytest's machinery, a tenth of a second the CLI need not pay)

        waiting = _Quiet(math.inf) if quiet is None else quiet
        busy = False
        while True:
            await trio.testing.wait_all_tasks_blocked()
            if self._post is None or self._post.busy <= 0:
                if busy:  # (a handler finished: something happened)
                    waiting.reset()
                return
            busy = True
            if not await waiting.wait(0.0005):
                raise StallError(
                    f"a handler has run for {waiting.limit:g} s without finishing while the scenario "
                    "waits: a deadlock (does an actor wait for a message it can only handle after the "
                    f"current one?), or it waits for something outside the runtime ({self.held} held)"
                )

    def _deliver(self, cell: Cell, env: Envelope) -> None:
        try:
            if cell.put_nowait(env):
                return
        except ActorStoppedError:
            pass
        assert self._post is not None
        self._post.refuse(env, cell.id, ActorStoppedError(cell.id, type(env.payload).__name__),
                          f"{cell.id} stopped before the stepping scheduler delivered it")

    def _release(self, cell: Cell) -> None:
        """Hand everything held for ``cell`` to its mailbox now (it is stopping)."""
        for key in [k for k in self._held if k[1] == str(cell.id)]:
            for c, env, _ in self._held.pop(key):
                self._deliver(c, env)

    def _detach(self) -> None:
        """Deliver everything still held and let the runtime schedule live from now on."""
        for key in sorted(self._held):
            for cell, env, _ in self._held[key]:
                self._deliver(cell, env)
        self._held.clear()
        self._post = None
