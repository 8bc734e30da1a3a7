"""How a live view draws its gauges: a box per agent, then the latest lines.

Pure functions of :class:`~._live_gauge.Gauge` copies: they run in the worker thread that
writes a frame, never in the agents' event loop. The boxes are laid out here, as rich
segments, rather than with rich's panels and tables: a frame is a few fixed rows, and
laying them out directly costs a fraction of a general layout, several times a second.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from attrs import frozen
from rich.cells import cell_len, set_cell_size
from rich.console import Console, ConsoleOptions
from rich.segment import Segment

from livecontext.protocol.context import HistoryFill, LimitLevel
from livecontext.protocol.history import TaskStatus

from ._live_gauge import Gauge, Line, one_line

BAR_WIDTH = 24
LABEL_WIDTH = 10

_LEVEL_STYLE = {LimitLevel.OK: "green", LimitLevel.SOFT: "yellow", LimitLevel.HARD: "dark_orange",
                LimitLevel.TRUNCATE: "red"}
_STATUS_STYLE = {TaskStatus.ACTIVE: "cyan", TaskStatus.WAITING_USER: "green", TaskStatus.WAITING_PARENT: "green",
                 TaskStatus.WAITING_INTERNAL: "cyan", TaskStatus.COMPLETED: "green", TaskStatus.ABANDONED: "yellow",
                 TaskStatus.TERMINATED: "yellow", TaskStatus.WAITING_APPROVAL: "yellow",
                 TaskStatus.PAUSED: "yellow", TaskStatus.FAILED: "red"}

Piece = tuple[str, str]
"""Some text and its style (a rich style name, ``""`` for none)."""
Row = list[Piece]

Snapshot = tuple[list[Gauge], list[Line]]
"""What one frame draws: copies of the gauges, and the latest lines with their agents' names."""


@frozen
class Box:
    """One agent's box: a title on its top border, a footer on its bottom one, rows between."""

    title: str
    footer: str
    style: str
    """The border's style (and the footer's, once the run is over)."""
    rows: list[Row]
    line: Row
    """The same, on one line: a frame whose boxes would not fit the screen shows these."""

    @property
    def height(self) -> int:
        """Lines the box takes: its rows and two borders."""
        return len(self.rows) + 2


@frozen
class Frame:
    """A whole frame: each agent's box, then the latest lines (a rich renderable)."""

    boxes: list[Box]
    lines: list[Row]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        width = max(options.max_width, 20)
        if sum(box.height for box in self.boxes) + len(self.lines) <= (options.height or console.height):
            for box in self.boxes:
                yield from _box(console, box, width)
        else:  # (many agents: one line each, every one of them on the screen)
            for box in self.boxes:
                yield from _fit(console, box.line, width)
                yield Segment.line()
        for row in self.lines:
            yield from _fit(console, row, width)
            yield Segment.line()


def frame(gauges: Sequence[Gauge], recent: Sequence[Line] = ()) -> Frame:
    """Every agent's box, in order, then the latest lines (dim, one each)."""
    width = max((len(g.name) for g in gauges), default=0)
    return Frame([agent_box(g) for g in gauges],
                 [[(f"{line.agent:<{width}}  {one_line(line.text)}", "dim")] for line in recent])


def agent_box(g: Gauge) -> Box:
    """One agent: its state and step, what it does, its context against the budget, its
    unfolded history against the limits, recap folds, notifications, mailboxes, progress."""
    recap: Row = [(f"{g.folds} fold(s)  ·  {g.notifications} notification(s)", "")]
    if g.last_notification:
        recap.append((f"  last: {one_line(g.last_notification)}", "magenta"))
    peak = f"  (peak {g.mailbox_peak})" if g.mailbox_peak else ""
    rows = [
        _row("state", [(g.state.value, "bold cyan"), (f"  step {g.steps}  ", ""), (one_line(g.doing), "italic")]),
        _row("context", _context(g)),
        _row("history", _history(g.fill)),
        _row("recap", recap),
        _row("mailboxes", [("  ".join(f"{actor} {n}" for actor, n in g.mailboxes) + peak, "")]),
    ]
    progress = g.progress
    if progress is not None:
        done, total, unit = progress
        rows.append(_row("progress", _bar(done, total, f"{done}/{total} {unit}", "cyan")))
    thread = g.watched.actors.thread_id
    title = g.name if g.name == thread else f"{g.name} (thread {thread})"
    if g.ended is None:
        return Box(title, "running", "cyan", rows, _line(g, "running", "cyan"))
    style = _STATUS_STYLE[g.status.status] if g.status is not None else "cyan"
    if g.reason.startswith("failed"):
        style = "red"
    footer = f"ended: {g.ended}" + (f" ({g.reason})" if g.reason else "")
    return Box(title, footer, style, rows, _line(g, footer, style))


def _line(g: Gauge, footer: str, style: str) -> Row:
    """An agent's box on one line: name, state, step, tokens, history, folds, notifications,
    messages waiting, and how it ends (or what it does)."""
    fill = g.fill
    history = f"history {fill.level.value} {fill.entries} entries" if fill is not None else "history ?"
    waiting = sum(n for _, n in g.mailboxes)
    return [(f"{g.name}  ", "bold"), (g.state.value, "bold cyan"), (f"  step {g.steps}", ""),
            (f"  {g.tokens or 0:,}/{g.budget or g.watched.budget:,} tokens", ""),
            (f"  {history}", _LEVEL_STYLE[fill.level] if fill is not None else ""),
            (f"  {g.folds} fold(s), {g.notifications} notification(s), {waiting} message(s) waiting", ""),
            (f"  {footer if g.ended is not None else one_line(g.doing)}", style if g.ended is not None else "italic")]


def _row(label: str, value: Row) -> Row:
    return [(f"{label:<{LABEL_WIDTH}}", "dim"), *value]


def _context(g: Gauge) -> Row:
    budget = g.budget or g.watched.budget
    if g.tokens is None:
        return [(f"no model call yet  ·  budget {budget:,} tokens", "")]
    label = f"{g.tokens:,} / {budget:,} tokens  ·  {g.model_calls} model call(s)"
    if g.model_errors:
        label += f", {g.model_errors} failed"
    return _bar(g.tokens, budget, label, "red" if g.tokens > budget else "blue")


def _history(fill: HistoryFill | None) -> Row:
    if fill is None:
        return [("not read yet", "")]
    measures = [(fill.entries, fill.max_entries, "entries"), (fill.tokens, fill.max_tokens, "tokens"),
                (fill.bytes, fill.max_bytes, "bytes")]
    said = [f"{used:,}/{most:,} {unit}" if most else f"{used:,} {unit}"
            for used, most, unit in measures if most or unit != "bytes"]
    limited = [(used, most) for used, most, _ in measures if most]
    if not limited:
        return [(f"{', '.join(said)} unfolded  ·  no limits", "")]
    label = (f"{fill.level.value}  ·  {', '.join(said)} unfolded  ·  soft {fill.soft:.0%} hard {fill.hard:.0%} "
             f"truncate {fill.truncate:.0%}")
    used, most = max(limited, key=lambda m: m[0] / m[1])  # the bar: the measure nearest its limit
    return _bar(used, most, label, _LEVEL_STYLE[fill.level])


def _bar(done: float, total: float, label: str, style: str) -> Row:
    filled = round(BAR_WIDTH * min(max(done / total, 0.0), 1.0)) if total > 0 else 0
    return [("━" * filled, style), ("━" * (BAR_WIDTH - filled), "grey30"), (f" {label}", "")]


def _box(console: Console, box: Box, width: int) -> Iterator[Segment]:
    border = console.get_style(box.style)
    title = set_cell_size(box.title, min(cell_len(box.title), width - 6))
    yield Segment("╭─ ", border)
    yield Segment(title, console.get_style("bold"))
    yield Segment(" " + "─" * (width - 5 - cell_len(title)) + "╮", border)
    yield Segment.line()
    for row in box.rows:
        yield Segment("│ ", border)
        yield from _fit(console, row, width - 4)
        yield Segment(" │", border)
        yield Segment.line()
    footer = set_cell_size(box.footer, min(cell_len(box.footer), width - 6))
    yield Segment("╰" + "─" * (width - 5 - cell_len(footer)) + " ", border)
    yield Segment(footer, console.get_style("default" if box.footer == "running" else f"bold {box.style}"))
    yield Segment(" ─╯", border)
    yield Segment.line()


def _fit(console: Console, row: Row, width: int) -> Iterator[Segment]:
    """``row`` in exactly ``width`` cells: cut with an ellipsis, or padded."""
    left = width
    for text, style in row:
        size = cell_len(text)
        if size > left:
            yield Segment(set_cell_size(text, left - 1) + "…", console.get_style(style) if style else None)
            return
        yield Segment(text, console.get_style(style) if style else None)
        left -= size
    if left:
        yield Segment(" " * left)
