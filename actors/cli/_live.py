"""``--live``: a panel per agent that follows a run as it goes (``run``, ``run SYSTEM.toml``, ``chat``).

The view is an observer: it subscribes to what each agent's actors publish anyway (the
engine's events, the history store's changes and limit reports, the recap maintainer's
folds), and reads what costs the agents nothing: each actor's mailbox depth (a plain read of
the runtime) and, when the history has changed and its store is idle, how full the unfolded
history is (:class:`~livecontext.protocol.context.GetFill`, answered in the view's own task).

Nothing of the view runs per event: events wait in its subscriptions (bounded, and far
larger than an agent can publish between two ticks, so a publisher never waits on it), and
a timer, a few times a second, takes them all, in the order they were published, into each
agent's :class:`~._live_gauge.Gauge` (a few attribute writes each). It then draws, in a
worker thread, from copies of the gauges: a slow terminal makes the view drop frames (a
frame still being written when the next is due is skipped), never makes an agent wait.
Without a terminal (stdout is a file or a pipe), the view writes plain lines instead, one
per state change, fold, notification or limit crossed, each naming its agent; no escape
codes. When the block ends, the view reads where each agent stands and draws the final
panel (or the closing lines).
"""

from __future__ import annotations

import collections
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import trio
from rich.console import Console
from rich.live import Live

from livecontext.protocol.agent import AgentStatus, GetStatus, GetTail, Tail
from livecontext.protocol.context import GetFill, HistoryFill
from livecontext.protocol.kernel import Envelope, Topic
from livecontext.runtime import ActorRef, LivecontextError, Runtime, UnknownActorError

from ..agent import AgentActors
from ..recap import recap_topic
from ._live_gauge import Gauge, Line, Watched
from ._live_panel import Snapshot, frame

REFRESH_HZ = 4.0
"""Ticks a second: enough to follow a run, few enough to cost it little."""
FEED_BUFFER = 16384
"""Events each subscription holds between two ticks. A publisher would wait only past that:
65,000 events a second on one agent's topic, several times what a whole runtime delivers."""
RECENT_LINES = 5
"""How many of the latest plain lines a terminal frame shows under the panels."""
FINAL_READ_S = 2.0
"""How long the view waits for an agent's final state before drawing without it."""

Feed = tuple[Gauge, trio.MemoryReceiveChannel[Envelope]]


class LiveView:
    """The gauges of the agents watched, and where they are drawn (see the module docstring).

    Made by :func:`open_live_view`.
    """

    def __init__(self, rt: Runtime, watched: Sequence[Watched], console: Console, hz: float) -> None:
        self._lines: list[Line] = []
        self._recent: collections.deque[Line] = collections.deque(maxlen=RECENT_LINES)
        self.gauges = {w.name: Gauge(w, budget=w.budget, lines=self._lines) for w in watched}
        """Each agent's gauge, by name."""
        self.frames = 0
        """Frames drawn by the timer (besides the first and the final one)."""
        self.dropped = 0
        """Frames skipped because the previous one was still being written."""
        self.cpu_s = 0.0
        """CPU time the view spent: its first reads and frame, taking events, sampling,
        drawing (in both threads), its final reads and frame."""
        self.terminal = draws_panels(console)
        """Whether it draws panels (else it writes plain lines)."""
        self._rt = rt
        self._client = rt.client(f"live-view-{id(self):x}")
        self._console = console
        self._period = 1.0 / hz
        self._feeds: list[Feed] = []
        self._drawing = False
        self._live: Live | None = None
        self._width = max((len(name) for name in self.gauges), default=0)

    def stopped(self, name: str, reason: str) -> None:
        """Say why agent ``name``'s run stopped (``no_input``, ``max_steps``, ``failed: ...``),
        for its final panel."""
        self.gauges[name].reason = reason

    # -- reading ----------------------------------------------------------------------------------

    def _take_events(self) -> bool:
        """Take every event waiting in the subscriptions, in the order they were published
        (message ids sort so); return whether there was any."""
        taken: list[tuple[str, Gauge, Any]] = []
        for gauge, channel in self._feeds:
            while True:
                try:
                    env = channel.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                    break
                taken.append((env.message_id, gauge, env.payload))
        taken.sort(key=lambda item: item[0])
        for _, gauge, event in taken:
            gauge.take(event)
        return bool(taken)

    async def _read_state(self, gauge: Gauge) -> None:
        tail = await self._client.ask(gauge.watched.actors.history, GetTail())
        assert isinstance(tail, Tail)
        gauge.state, gauge.level = tail.state, tail.limit
        await self._read_fill(gauge)

    async def _read_fill(self, gauge: Gauge) -> None:
        fill = await self._client.ask(gauge.watched.actors.history, GetFill())
        assert isinstance(fill, HistoryFill)
        gauge.read_fill(fill)

    def _sample_mailboxes(self, gauge: Gauge) -> bool:
        """Read the depth of each of the agent's mailboxes; return whether one changed."""
        depths = []
        for label, ref in _actors(gauge.watched.actors):
            try:
                queued = self._rt.mailbox_statistics(ref).queued
            except UnknownActorError:  # (stopped and forgotten while the run ends)
                continue
            depths.append((label, queued))
            gauge.mailbox_peak = max(gauge.mailbox_peak, queued)
        changed = tuple(depths) != gauge.mailboxes
        gauge.mailboxes = tuple(depths)
        return changed

    async def _sample(self) -> bool:
        """Take the events, the mailboxes' depths and stale fills; return whether anything changed."""
        changed = self._take_events()
        for gauge in self.gauges.values():
            changed = self._sample_mailboxes(gauge) or changed
            # only from an idle store: the read then runs at once in this task (its handler is
            # inline), so it never queues in front of an agent's own requests
            if gauge.fill_stale and self._rt.is_idle(gauge.watched.actors.history):
                with contextlib.suppress(LivecontextError):
                    await self._read_fill(gauge)
                    changed = True
        return changed

    # -- drawing ----------------------------------------------------------------------------------

    def _snapshot(self) -> Snapshot:
        """What the next frame draws: copies of the gauges, and the latest lines (older
        lines are let go: on a terminal, the panels say the rest)."""
        self._recent.extend(self._lines)
        self._lines.clear()
        return [g.snapshot() for g in self.gauges.values()], list(self._recent)

    def _take_lines(self) -> list[Line]:
        out = list(self._lines)
        self._lines.clear()
        return out

    def _draw_timed(self, shot: Snapshot | None, lines: list[Line]) -> float:
        """:meth:`_draw_now` in a worker thread; return the CPU time it took there."""
        started = time.thread_time()
        self._draw_now(shot, lines)
        return time.thread_time() - started

    def _draw_now(self, shot: Snapshot | None, lines: list[Line]) -> None:
        """Write one frame (panels) or the lines noted since the last one."""
        if shot is not None:
            assert self._live is not None
            self._live.update(frame(*shot), refresh=True)
        elif lines:
            self._console.file.write("".join(line.printed(self._width) for line in lines))
            self._console.file.flush()

    def _draw(self, nursery: trio.Nursery) -> None:
        """Start writing the next frame, unless the last is still being written (dropped)."""
        if self._drawing:
            self.dropped += 1
            return
        shot = self._snapshot() if self.terminal else None
        lines = [] if self.terminal else self._take_lines()
        if shot is None and not lines:
            return
        self._drawing = True
        nursery.start_soon(self._write, shot, lines)

    async def _write(self, shot: Snapshot | None, lines: list[Line]) -> None:
        try:
            self.cpu_s += await trio.to_thread.run_sync(self._draw_timed, shot, lines)
            self.frames += 1
        finally:
            self._drawing = False

    async def _tick(self, nursery: trio.Nursery) -> None:
        while True:
            await trio.sleep(self._period)
            started = time.thread_time()
            if await self._sample():  # (a quiet agent costs no frames)
                self._draw(nursery)
            self.cpu_s += time.thread_time() - started

    # -- the start and the end ----------------------------------------------------------------------

    def _start(self, feeds: list[Feed]) -> None:
        self._feeds = feeds
        for gauge in self.gauges.values():
            self._sample_mailboxes(gauge)
        if self.terminal:
            self._live = Live(frame(*self._snapshot()), console=self._console, auto_refresh=False)
            self._live.start(refresh=True)

    async def _final(self) -> None:
        """Take the events left, and read where each agent stands, for the final panel (or
        closing lines)."""
        self._take_events()
        for gauge in self.gauges.values():
            self._sample_mailboxes(gauge)
            state, status = gauge.state, None
            with trio.move_on_after(FINAL_READ_S), contextlib.suppress(LivecontextError):
                history = gauge.watched.actors.history
                tail = await self._client.ask(history, GetTail())
                got = await self._client.ask(history, GetStatus())
                assert isinstance(tail, Tail) and isinstance(got, AgentStatus)
                state, status = tail.state, got
                await self._read_fill(gauge)
            gauge.end(state, status)

    def _stop(self) -> None:
        if self._live is not None:
            self._live.update(frame(*self._snapshot()))
            self._live.stop()  # (draws that last frame whole, and leaves it on the screen)
            self._live = None
        else:
            self._draw_now(None, self._take_lines())


def draws_panels(console: Console) -> bool:
    """Whether a live view on ``console`` draws panels (a terminal), rather than plain lines."""
    return console.is_terminal and not console.is_dumb_terminal


@contextlib.asynccontextmanager
async def open_live_view(rt: Runtime, watched: Sequence[Watched], console: Console, *,
                         hz: float = REFRESH_HZ) -> AsyncIterator[LiveView]:
    """Watch the agents ``watched`` on ``console`` while the block runs (see the module docstring).

    Every subscription is open when the block starts, so nothing the agents do in it is
    missed. The view's timer lives in a nursery of its own, cancelled when the block ends;
    then the view takes the events still waiting, reads each agent's final state (under a
    shield: an interrupted run shows where it stopped) and draws the final frame.
    """
    view = LiveView(rt, watched, console, hz)
    started = time.thread_time()
    for gauge in view.gauges.values():
        await view._read_state(gauge)
    async with contextlib.AsyncExitStack() as stack:
        feeds = [(gauge, await stack.enter_async_context(rt.open_subscription(topic, buffer=FEED_BUFFER)))
                 for gauge in view.gauges.values() for topic in _topics(gauge.watched.actors)]
        view._start(feeds)
        view.cpu_s += time.thread_time() - started
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(view._tick, nursery)
                try:
                    yield view
                finally:
                    nursery.cancel_scope.cancel()
            started = time.thread_time()
            with trio.CancelScope(shield=True):
                await view._final()
        finally:
            view._stop()
            view.cpu_s += time.thread_time() - started


def _topics(actors: AgentActors) -> tuple[Topic, ...]:
    topics = (actors.events, actors.history_events)
    return (*topics, recap_topic(actors.thread_id)) if actors.recap is not None else topics


def _actors(actors: AgentActors) -> list[tuple[str, ActorRef[Any]]]:
    """An agent's actors, each with the short label its mailbox is shown under."""
    out: list[tuple[str, ActorRef[Any]]] = [
        ("engine", actors.engine), ("history", actors.history), ("apps", actors.apps), ("input", actors.input)]
    if actors.recap is not None:
        out.append(("recap", actors.recap))
    out += [(f"analyzer {ref.id.name.rpartition('.')[2]}", ref) for ref in actors.analyzers]
    return out
