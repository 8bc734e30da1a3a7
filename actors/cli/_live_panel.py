"""How a live view draws its gauges: one rich panel per agent.

Pure functions of :class:`~._live_gauge.Gauge` copies: they run in the worker thread that
writes a frame, never in the agents' event loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from livecontext.protocol import HistoryFill, LimitLevel, TaskStatus

from ._live_gauge import Gauge

BAR_WIDTH = 24

_LEVEL_STYLE = {LimitLevel.OK: "green", LimitLevel.SOFT: "yellow", LimitLevel.HARD: "dark_orange",
                LimitLevel.TRUNCATE: "red"}
_STATUS_STYLE = {TaskStatus.ACTIVE: "cyan", TaskStatus.WAITING_USER: "green", TaskStatus.COMPLETED: "green",
                 TaskStatus.PAUSED: "yellow", TaskStatus.FAILED: "red"}


Snapshot = tuple[list[Gauge], list[tuple[str, str]]]
"""What one frame draws: copies of the gauges, and the latest lines with their agents' names."""


def frame(gauges: Sequence[Gauge], recent: Sequence[tuple[str, str]] = ()) -> RenderableType:
    """Every agent's panel, in order, then the latest lines (dim, one each)."""
    width = max((len(g.name) for g in gauges), default=0)
    lines = [Text(f"{name:<{width}}  {line}", style="dim", no_wrap=True, overflow="ellipsis") for name, line in recent]
    return Group(*(agent_panel(g) for g in gauges), *lines)


def agent_panel(g: Gauge) -> Panel:
    """One agent: its state and step, what it does, its context against the budget, its
    unfolded history against the limits, recap folds, notifications, mailboxes, progress."""
    rows = Table.grid(padding=(0, 1))
    rows.add_column(style="dim", no_wrap=True, min_width=len("mailboxes"))
    rows.add_column(overflow="ellipsis", no_wrap=True)
    rows.add_row("state", Text.assemble((g.state.value, "bold cyan"), f"  step {g.steps}  ",
                                        (g.doing, "italic")))
    rows.add_row("context", _context(g))
    rows.add_row("history", _history(g.fill))
    recap = Text(f"{g.folds} fold(s)  ·  {g.notifications} notification(s)")
    if g.last_notification:
        recap.append(f"  last: {g.last_notification}", style="magenta")
    rows.add_row("recap", recap)
    rows.add_row("mailboxes", Text("  ".join(f"{actor} {n}" for actor, n in g.mailboxes)
                                   + (f"  (peak {g.mailbox_peak})" if g.mailbox_peak else "")))
    progress = g.progress
    if progress is not None:
        done, total, unit = progress
        rows.add_row("progress", _bar(done, total, f"{done}/{total} {unit}", "cyan"))
    title = g.name if g.name == g.watched.actors.thread_id else f"{g.name} (thread {g.watched.actors.thread_id})"
    if g.ended is None:
        return Panel(rows, title=Text(title, style="bold"), title_align="left", border_style="cyan",
                     subtitle=Text("running"), subtitle_align="right")
    style = _STATUS_STYLE[g.status.status] if g.status is not None else "cyan"
    if g.reason.startswith("failed"):
        style = "red"
    why = f" ({g.reason})" if g.reason else ""
    return Panel(rows, title=Text(title, style="bold"), title_align="left", border_style=style,
                 subtitle=Text(f"ended: {g.ended}{why}", style=f"bold {style}"), subtitle_align="right")


def _context(g: Gauge) -> RenderableType:
    budget = g.budget or g.watched.budget
    if g.tokens is None:
        return Text(f"no model call yet  ·  budget {budget:,} tokens")
    label = f"{g.tokens:,} / {budget:,} tokens  ·  {g.model_calls} model call(s)"
    if g.model_errors:
        label += f", {g.model_errors} failed"
    return _bar(g.tokens, budget, label, "red" if g.tokens > budget else "blue")


def _history(fill: HistoryFill | None) -> RenderableType:
    if fill is None:
        return Text("not read yet")
    measures = [(fill.entries, fill.max_entries, "entries"), (fill.tokens, fill.max_tokens, "tokens"),
                (fill.bytes, fill.max_bytes, "bytes")]
    said = [f"{used:,}/{most:,} {unit}" if most else f"{used:,} {unit}"
            for used, most, unit in measures if most or unit != "bytes"]
    limited = [(used, most, unit) for used, most, unit in measures if most]
    if not limited:
        return Text(f"{', '.join(said)} unfolded  ·  no limits")
    label = (f"{fill.level.value}  ·  {', '.join(said)} unfolded  ·  soft {fill.soft:.0%} hard {fill.hard:.0%} "
             f"truncate {fill.truncate:.0%}")
    used, most, _ = max(limited, key=lambda m: m[0] / m[1])  # the bar: the measure nearest its limit
    return _bar(used, most, label, _LEVEL_STYLE[fill.level])


def _bar(done: float, total: float, label: str, style: str) -> Table:
    line = Table.grid(padding=(0, 1))
    line.add_column(width=BAR_WIDTH)
    line.add_column(overflow="ellipsis", no_wrap=True)
    line.add_row(ProgressBar(total=max(total, 1), completed=min(done, total), width=BAR_WIDTH,
                             complete_style=style, finished_style=style), Text(label))
    return line
