"""A trace's sequence diagram as one standalone SVG (for papers and READMEs).

Actors are columns, time flows down one row per message: asks are solid arrows, replies
dashed, tells open-headed, publishes dotted (one row for the subscribers of one change); the
engine's lifeline is shaded by its state; marks (folds, notifications, edits, denials, pauses,
failures) are notes at the right, on their own rows. A long trace keeps its first and last
rows and says how many messages it left out in between. The same data always gives the same
bytes: nothing depends on the clock, the machine or the order of a set.
"""

from __future__ import annotations

import bisect
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

MAX_ROWS = 400
"""Rows drawn at most; a longer trace keeps its first and last :data:`MAX_ROWS` // 2."""

ROW = 20
TOP = 88
LEFT = 92
NOTES = 470
"""The width of the notes' margin at the right."""
CHAR = 6.4
"""The width of a character at the labels' size (an estimate: an SVG has no font metrics)."""

ROLE_COLOURS = {
    "engine": "#1f77b4", "history": "#2ca02c", "apps": "#ff7f0e", "input": "#9467bd", "recap": "#8c564b",
    "analyzer": "#e377c2", "model": "#17becf", "agent": "#bcbd22", "system": "#7f7f7f", "other": "#7f7f7f",
}
MARK_COLOURS = {"fold": "#8c564b", "notification": "#e377c2", "edit": "#ff7f0e", "denial": "#d62728",
                "pause": "#7f7f7f", "failure": "#d62728"}
STATE_COLOURS = {"WaitingInput": "#e8e8e8", "PendingInput": "#c6dbef", "WaitingToolResults": "#fdd0a2",
                 "ToolResultsReady": "#fdae6b", "PendingToolResults": "#9ecae1"}

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

Row = tuple[str, Any]
"""``("messages", [message, ...])``, ``("mark", mark)`` or ``("gap", (left out, first seq, last seq))``."""


def trace_svg(data: dict[str, Any]) -> str:
    """The sequence diagram of a trace (the JSON of :func:`~._json.trace_json`) as SVG text."""
    actors = data["actors"]
    x_of, width = _columns(actors)
    rows, left_out = _rows(data["messages"], data["marks"])
    height = TOP + ROW * (len(rows) + 1) + 24
    svg = ET.Element("svg", {"xmlns": "http://www.w3.org/2000/svg", "width": str(width), "height": str(height),
                             "viewBox": f"0 0 {width} {height}", "font-family": "Helvetica, Arial, sans-serif",
                             "font-size": "11"})
    _defs(svg)
    ET.SubElement(svg, "rect", {"width": str(width), "height": str(height), "fill": "#ffffff"})
    _title(svg, data, left_out)
    bottom = TOP + ROW * len(rows) + 8
    _heads(svg, actors, x_of, bottom)
    _states(svg, data["states"], rows, x_of.get(_engine(actors), None))
    labels = {a["id"]: a["label"] for a in actors}
    seen: set[int] = set()
    for k, (what, item) in enumerate(rows):
        y = TOP + ROW * k + ROW // 2 + 4
        if what == "messages":
            if item[0]["seq"] not in seen:  # the time axis: each record's seq and time, at its first row
                seen.add(item[0]["seq"])
                _text(svg, 8, y + 4, f"{item[0]['seq']}  {item[0]['t']:.3f}s", fill="#888888", size=9)
            _messages(svg, item, x_of, y)
        elif what == "mark":
            _mark(svg, item, x_of, labels, y, width)
        else:
            _gap(svg, item, y, width)
    _legend(svg, bottom + 18)
    ET.indent(svg, space=" ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(svg, encoding="unicode") + "\n"


def _columns(actors: Sequence[dict[str, Any]]) -> tuple[dict[str, float], int]:
    """Each actor's x, and the drawing's width."""
    x_of: dict[str, float] = {}
    x = float(LEFT)
    for actor in actors:
        w = max(120.0, CHAR * len(actor["label"]) + 24)
        x_of[actor["id"]] = x + w / 2
        x += w
    return x_of, int(x + NOTES)


def _rows(messages: Sequence[dict[str, Any]], marks: Sequence[dict[str, Any]]) -> tuple[list[Row], int]:
    """The rows, in order: the messages (a change's publishes on one row), each mark after the
    last message of its record to or from its author (else before the next record's);
    capped at :data:`MAX_ROWS`. Returns them and how many messages were left out."""
    rows: list[Row] = []
    for m in messages:
        last = rows[-1] if rows else None
        if (m["mode"] == "publish" and last is not None and last[1][0]["mode"] == "publish"
                and (last[1][0]["seq"], last[1][0]["from"], last[1][0]["kind"]) == (m["seq"], m["from"], m["kind"])):
            last[1].append(m)
        else:
            rows.append(("messages", [m]))
    starts = [item[0]["seq"] for _, item in rows]
    after: dict[int, list[dict[str, Any]]] = {}  # message row -> the marks drawn before it
    for mark in marks:
        after.setdefault(_place(rows, starts, mark), []).append(mark)
    placed: list[Row] = []
    for k in range(len(rows) + 1):
        placed += [("mark", mark) for mark in after.get(k, ())]
        if k < len(rows):
            placed.append(rows[k])
    rows = placed
    if len(rows) <= MAX_ROWS:
        return rows, 0
    head, tail = rows[:MAX_ROWS // 2], rows[-(MAX_ROWS // 2):]
    gone = [m for what, item in rows[MAX_ROWS // 2:-(MAX_ROWS // 2)] if what == "messages" for m in item]
    seqs = [m["seq"] for m in gone] or [0]
    return [*head, ("gap", (len(gone), min(seqs), max(seqs))), *tail], len(gone)


def _place(rows: list[Row], starts: list[int], mark: dict[str, Any]) -> int:
    """Before which message row a mark goes (see :func:`_rows`); ``starts``: each row's seq."""
    seq, author = mark["seq"], mark["author"]
    k = bisect.bisect_left(starts, seq)
    place = k
    while k < len(rows) and starts[k] == seq:
        if any(m["from"] == author or m["to"] == author for m in rows[k][1]):
            place = k + 1
        k += 1
    return place if place > bisect.bisect_left(starts, seq) else k


def _defs(svg: ET.Element) -> None:
    defs = ET.SubElement(svg, "defs")
    for name, fill, colour in (("ask", "#333333", "#333333"), ("reply", "#777777", "#777777"),
                               ("tell", "none", "#333333"), ("publish", "#6a3d9a", "#6a3d9a")):
        marker = ET.SubElement(defs, "marker", {"id": f"head-{name}", "viewBox": "0 0 10 10", "refX": "9",
                                                "refY": "5", "markerWidth": "7", "markerHeight": "7",
                                                "orient": "auto-start-reverse"})
        ET.SubElement(marker, "path", {"d": "M 0 0 L 10 5 L 0 10 z", "fill": fill, "stroke": colour})


_STROKES = {"ask": ("#333333", ""), "reply": ("#777777", "5 3"), "tell": ("#333333", ""),
            "publish": ("#6a3d9a", "1 3")}


def _title(svg: ET.Element, data: dict[str, Any], left_out: int) -> None:
    system = f" (agent of system {data['system']})" if data["system"] else ""
    at = f", up to seq {data['at']}" if data["at"] is not None else ""
    counts = data["counts"]
    _text(svg, 12, 20, f"thread {data['thread']}{system}{at}: {counts['records']} records, "
                       f"{counts['messages']} messages, {counts['model_calls']} model calls, "
                       f"{data['duration']:.3f} s from {data['started_at']}", size=13, weight="bold")
    if left_out:
        _text(svg, 12, 38, f"{left_out:,} of {counts['messages']:,} messages are left out here (the middle of the "
                           "run); the trace's page (--format html) shows them all", fill="#b22222")


def _heads(svg: ET.Element, actors: Sequence[dict[str, Any]], x_of: dict[str, float], bottom: int) -> None:
    for actor in actors:
        x = x_of[actor["id"]]
        colour = ROLE_COLOURS.get(actor["role"], "#7f7f7f")
        w = max(110.0, CHAR * len(actor["label"]) + 16)
        ET.SubElement(svg, "line", {"x1": _n(x), "y1": str(TOP - 22), "x2": _n(x), "y2": str(bottom),
                                    "stroke": "#bbbbbb", "stroke-dasharray": "4 4"})
        box = ET.SubElement(svg, "rect", {"x": _n(x - w / 2), "y": str(TOP - 42), "width": _n(w), "height": "22",
                                          "rx": "4", "fill": colour, "fill-opacity": "0.18", "stroke": colour})
        ET.SubElement(box, "title").text = _clean(actor["id"])
        _text(svg, x, TOP - 27, actor["label"], anchor="middle", weight="bold")


def _engine(actors: Sequence[dict[str, Any]]) -> str:
    return next((a["id"] for a in actors if a["role"] == "engine"), "")


def _states(svg: ET.Element, states: Sequence[dict[str, Any]], rows: list[Row], x: float | None) -> None:
    """The engine's lifeline shaded by its state: each message row is in the state the
    engine entered at the latest record at or before the row's; a run of rows in one state
    is one box (a gap in the rows ends it)."""
    if x is None or not states:
        return
    spans = sorted(states, key=lambda span: span["seq0"])
    k = 0
    run: tuple[int, dict[str, Any]] | None = None  # (first row, span)

    def close(end: int) -> None:
        if run is None:
            return
        first, span = run
        rect = ET.SubElement(svg, "rect", {"x": _n(x - 5), "y": str(TOP + ROW * first), "width": "10",
                                           "height": str(ROW * (end - first)),
                                           "fill": STATE_COLOURS.get(span["state"], "#dddddd"), "stroke": "#999999",
                                           "stroke-width": "0.5"})
        ET.SubElement(rect, "title").text = f"{span['state']} from seq {span['seq0']} to {span['seq1']}"

    for row, (what, item) in enumerate(rows):
        if what == "gap":
            close(row)
            run = None
            continue
        if what != "messages":
            continue
        seq = item[0]["seq"]
        while k + 1 < len(spans) and spans[k + 1]["seq0"] <= seq:
            k += 1
        if run is None or run[1] is not spans[k]:
            close(row)
            run = (row, spans[k])
    close(len(rows))


def _messages(svg: ET.Element, group: list[dict[str, Any]], x_of: dict[str, float], y: int) -> None:
    first = group[0]
    mode = first["mode"]
    colour, dash = _STROKES.get(mode, _STROKES["tell"])
    x1 = x_of.get(first["from"], float(LEFT))
    g = ET.SubElement(svg, "g")
    ET.SubElement(g, "title").text = _clean("\n".join(
        f"#{m['i']} seq {m['seq']} t={m['t']:.3f}s {m['from']} -> {m['to']} {m['kind']} ({m['mode']}): {m['summary']}"
        for m in group))
    targets = [x_of.get(m["to"], float(LEFT)) for m in group]
    if len(group) == 1 and targets[0] == x1:  # to itself: a loop to the right
        path = f"M {_n(x1)} {y - 6} h 28 v 12 h -26"
        ET.SubElement(g, "path", _stroke({"d": path, "fill": "none", "marker-end": f"url(#head-{mode})"}, colour, dash))
        _text(g, x1 + 34, y + 4, first["kind"])
        return
    for x2 in targets:
        ET.SubElement(g, "line", _stroke({"x1": _n(x1), "y1": str(y), "x2": _n(x2 - _towards(x1, x2)),
                                          "y2": str(y), "marker-end": f"url(#head-{mode})"}, colour, dash))
    far = max(targets, key=lambda x2: abs(x2 - x1))
    label = first["kind"] if len(group) == 1 else f"{first['kind']} to {len(group)} subscribers"
    room = max(abs(far - x1) - 8, 40.0)
    _text(g, (x1 + far) / 2, y - 4, _fit(label, room), anchor="middle", fill=colour if mode != "ask" else "#000000")


def _towards(x1: float, x2: float) -> float:
    """How far short of ``x2`` an arrow from ``x1`` stops (its head touches the lifeline)."""
    return 1.0 if x2 > x1 else -1.0


def _mark(svg: ET.Element, mark: dict[str, Any], x_of: dict[str, float], labels: dict[str, str], y: int,
          width: int) -> None:
    colour = MARK_COLOURS.get(mark["type"], "#7f7f7f")
    note_x = width - NOTES + 8
    g = ET.SubElement(svg, "g")
    ET.SubElement(g, "title").text = _clean(f"seq {mark['seq']} t={mark['t']:.3f}s {mark['type']} by "
                                            f"{mark['author']}: {mark['summary']}")
    author_x = x_of.get(mark["author"])
    if author_x is not None:
        ET.SubElement(g, "circle", {"cx": _n(author_x), "cy": str(y), "r": "4", "fill": colour})
        ET.SubElement(g, "line", {"x1": _n(author_x + 4), "y1": str(y), "x2": str(note_x), "y2": str(y),
                                  "stroke": colour, "stroke-width": "0.8", "stroke-dasharray": "2 2"})
    ET.SubElement(g, "rect", {"x": str(note_x), "y": str(y - 9), "width": str(NOTES - 16), "height": "18",
                              "rx": "3", "fill": colour, "fill-opacity": "0.12", "stroke": colour})
    _text(g, note_x + 5, y + 4, _fit(f"{mark['type']} by {labels.get(mark['author'], mark['author'])}: "
                                     f"{mark['summary']}", NOTES - 26), fill="#222222")


def _gap(svg: ET.Element, gap: tuple[int, int, int], y: int, width: int) -> None:
    count, first, last = gap
    ET.SubElement(svg, "rect", {"x": "4", "y": str(y - 9), "width": str(width - 8), "height": "18",
                                "fill": "#fff5f5", "stroke": "#b22222", "stroke-dasharray": "3 3"})
    _text(svg, width / 2, y + 4, f"… {count:,} messages left out here (seq {first} to {last}) …", anchor="middle",
          fill="#b22222")


def _legend(svg: ET.Element, y: int) -> None:
    x = 12.0
    for mode in ("ask", "reply", "tell", "publish"):
        colour, dash = _STROKES[mode]
        ET.SubElement(svg, "line", _stroke({"x1": _n(x), "y1": str(y), "x2": _n(x + 30), "y2": str(y),
                                            "marker-end": f"url(#head-{mode})"}, colour, dash))
        _text(svg, x + 36, y + 4, mode)
        x += 90
    for state, colour in STATE_COLOURS.items():
        ET.SubElement(svg, "rect", {"x": _n(x), "y": str(y - 6), "width": "10", "height": "12", "fill": colour,
                                    "stroke": "#999999", "stroke-width": "0.5"})
        _text(svg, x + 14, y + 4, state)
        x += 14 + CHAR * len(state) + 14


def _stroke(attrs: dict[str, str], colour: str, dash: str) -> dict[str, str]:
    attrs["stroke"] = colour
    attrs["stroke-width"] = "1.2"
    if dash:
        attrs["stroke-dasharray"] = dash
    return attrs


def _text(parent: ET.Element, x: float, y: float, text: str, *, anchor: str = "start", size: int | None = None,
          weight: str | None = None, fill: str = "#000000") -> None:
    attrs = {"x": _n(x), "y": _n(y), "fill": fill}
    if anchor != "start":
        attrs["text-anchor"] = anchor
    if size is not None:
        attrs["font-size"] = str(size)
    if weight is not None:
        attrs["font-weight"] = weight
    ET.SubElement(parent, "text", attrs).text = _clean(text)


def _fit(text: str, room: float) -> str:
    """``text`` cut to what fits in ``room`` pixels."""
    most = max(int(room / CHAR), 4)
    return text if len(text) <= most else text[:most - 1] + "…"


def _clean(text: str) -> str:
    """``text`` without what XML 1.0 cannot hold (control characters, lone surrogates)."""
    return _NOT_XML.sub("\N{REPLACEMENT CHARACTER}", text)


def _n(x: float) -> str:
    """A coordinate, written the same way on every machine."""
    return f"{x:.1f}".rstrip("0").rstrip(".")
