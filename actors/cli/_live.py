"""``--live``: a panel per agent that follows a run as it goes (``run``, ``run SYSTEM.toml``, ``chat``).

The view is an observer: it subscribes to what each agent's actors publish anyway (the
engine's events, the history store's changes and limit reports, the recap maintainer's
folds), and reads what costs the agents nothing: each actor's mailbox depth (a plain read of
the runtime) and, when the history has changed and its store is idle, how full the unfolded
history is (:class:`~livecontext.protocol.GetFill`, answered in the view's own task).

Events only update a :class:`~._live_gauge.Gauge` (a few attribute writes). Drawing happens
on a timer, a few times a second, in a worker thread, from copies of the gauges: a slow
terminal makes the view drop frames (a frame still being written when the next is due is
skipped), never makes an agent wait. Without a terminal (stdout is a file or a pipe), the
view writes plain lines instead, one per state change, fold, notification or limit crossed,
each naming its agent; no escape codes. When the block ends, the view reads where each
agent stands and draws the final panel (or the closing lines).
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import trio
from rich.console import Console
from rich.live import Live

from livecontext.protocol import AgentStatus, Envelope, GetFill, GetStatus, GetTail, HistoryFill, Tail, Topic
from livecontext.runtime import ActorRef, LivecontextError, Runtime, UnknownActorError

from .._agent import AgentActors
from ..recap import recap_topic
from ._live_gauge import Gauge, Watched
from ._live_panel import Snapshot, frame

REFRESH_HZ = 4.0
"""Frames a second: enough to follow a run, few enough to cost it nothing measurable."""
RECENT_LINES = 5
"""How many of the latest plain lines a terminal frame shows under the panels."""
FINAL_READ_S = 2.0
"""How long the view waits for an agent's final state before drawing without it."""


class LiveView:
    """The gauges of the agents watched, and where they are drawn (see the module docstring).

    Made by :func:`open_live_view`.
    """

    def __init__(self, rt: Runtime, watched: Sequence[Watched], console: Console, hz: float) -> None:
        self._lines: list[tuple[str, str]] = []
        self._recent: collections.deque[tuple[str, str]] = collections.deque(maxlen=RECENT_LINES)
        self.gauges = {w.name: Gauge(w, budget=w.budget, lines=self._lines) for w in watched}
        """Each agent's gauge, by name."""
        self.frames = 0
        """Frames drawn."""
        self.dropped = 0
        """Frames skipped because the previous one was still being written."""
        self._rt = rt
        self._client = rt.client(f"live-view-{id(self):x}")
        self._console = console
        self._period = 1.0 / hz
        self._drawing = False
        self.terminal = draws_panels(console)
        """Whether it draws panels (else it writes plain lines)."""
        self._live: Live | None = None
        self._width = max(len(name) for name in self.gauges) if self.gauges else 0

    def stopped(self, name: str, reason: str) -> None:
        """Say why agent ``name``'s run stopped (``no_input``, ``max_steps``, ``failed: ...``),
        for its final panel."""
        self.gauges[name].reason = reason

    # -- reading ----------------------------------------------------------------------------------

    async def _read_state(self, gauge: Gauge) -> None:
        tail = await self._client.ask(gauge.watched.actors.history, GetTail())
        assert isinstance(tail, Tail)
        gauge.state, gauge.level = tail.state, tail.limit
        await self._read_fill(gauge)

    async def _read_fill(self, gauge: Gauge) -> None:
        fill = await self._client.ask(gauge.watched.actors.history, GetFill())
        assert isinstance(fill, HistoryFill)
        gauge.read_fill(fill)

    def _sample_mailboxes(self, gauge: Gauge) -> None:
        depths = []
        for label, ref in _actors(gauge.watched.actors):
            try:
                queued = self._rt.mailbox_statistics(ref).queued
            except UnknownActorError:  # (stopped and forgotten while the run ends)
                continue
            depths.append((label, queued))
            gauge.mailbox_peak = max(gauge.mailbox_peak, queued)
        gauge.mailboxes = tuple(depths)

    async def _sample(self) -> None:
        for gauge in self.gauges.values():
            self._sample_mailboxes(gauge)
            # only from an idle store: the read then runs at once in this task (its handler is
            # inline), so it never queues in front of an agent's own requests
            if gauge.fill_stale and self._rt.is_idle(gauge.watched.actors.history):
                with contextlib.suppress(LivecontextError):
                    await self._read_fill(gauge)

    # -- drawing ----------------------------------------------------------------------------------

    def _snapshot(self) -> Snapshot:
        """What the next frame draws: copies of the gauges, and the latest lines (older
        lines are let go: on a terminal, the panels say the rest)."""
        self._recent.extend(self._lines)
        self._lines.clear()
        return [g.snapshot() for g in self.gauges.values()], list(self._recent)

    def _take_lines(self) -> list[str]:
        out = [f"{name:<{self._width}}  {line}\n" for name, line in self._lines]
        self._lines.clear()
        return out

    def _draw_now(self, shot: Snapshot | None, lines: list[str]) -> None:
        """Write one frame (panels) or the lines noted since the last one; in a worker thread."""
        if shot is not None:
            assert self._live is not None
            self._live.update(frame(*shot), refresh=True)
        elif lines:
            self._console.file.write("".join(lines))
            self._console.file.flush()

    async def _draw(self, nursery: trio.Nursery) -> None:
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

    async def _write(self, shot: Snapshot | None, lines: list[str]) -> None:
        try:
            await trio.to_thread.run_sync(self._draw_now, shot, lines)
            self.frames += 1
        finally:
            self._drawing = False

    async def _tick(self, nursery: trio.Nursery) -> None:
        while True:
            await trio.sleep(self._period)
            await self._sample()
            await self._draw(nursery)

    # -- the end ----------------------------------------------------------------------------------

    async def _final(self) -> None:
        """Read where each agent stands, for the final panel (or closing lines)."""
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

    def _start(self) -> None:
        for gauge in self.gauges.values():
            self._sample_mailboxes(gauge)
        if self.terminal:
            self._live = Live(frame(*self._snapshot()), console=self._console, auto_refresh=False)
            self._live.start(refresh=True)

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
    missed. The view's tasks live in a nursery of its own, cancelled when the block ends;
    then it takes the events still buffered, reads each agent's final state (under a shield:
    an interrupted run shows where it stopped) and draws the final frame.
    """
    view = LiveView(rt, watched, console, hz)
    for gauge in view.gauges.values():
        await view._read_state(gauge)
    async with contextlib.AsyncExitStack() as stack:
        feeds: list[tuple[Gauge, trio.MemoryReceiveChannel[Envelope]]] = []
        for gauge in view.gauges.values():
            for topic in _topics(gauge.watched.actors):
                feeds.append((gauge, await stack.enter_async_context(rt.open_subscription(topic, buffer=1024))))
        view._start()
        try:
            async with trio.open_nursery() as nursery:
                for gauge, channel in feeds:
                    nursery.start_soon(_pump, gauge, channel)
                nursery.start_soon(view._tick, nursery)
                try:
                    yield view
                finally:
                    nursery.cancel_scope.cancel()
            for gauge, channel in feeds:  # published before the block ended: take them too
                _drain(gauge, channel)
            with trio.CancelScope(shield=True):
                await view._final()
        finally:
            view._stop()


async def _pump(gauge: Gauge, channel: trio.MemoryReceiveChannel[Envelope]) -> None:
    async for env in channel:
        gauge.take(env.payload)


def _drain(gauge: Gauge, channel: trio.MemoryReceiveChannel[Envelope]) -> None:
    while True:
        try:
            gauge.take(channel.receive_nowait().payload)
        except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
            return


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
