"""The summary layer (seed note 004): one line per folded step, merged into coarser range lines
past the recap's maximum length, recursively, the newest lines kept finest.

Each line stands for a :class:`Span` of consecutive folded steps. A span of one step is shown
as that step's own line (``e12 bash: pytest -x tests/test_a.py → 3 failed, 12 passed``); a
span of several as a *range line* built from their merged facts::

    e12–e40 (15 steps): 29 calls (grep x9, pytest x5, view x4, …); edited src/a.py, src/b.py;
    errors: ImportError in src/c.py (fixed at e31); last tests: 15 passed (e38)

How spans merge (:func:`fit`): while the lines are longer than allowed, two neighbours become
one: the oldest pair of equal size whose merge is no larger than the span before it, else the
two oldest. Spans grow like a binary counter carried from the old end (1, 1, 1, 1, 1 -> 2, 1,
1, 1 -> 2, 2, 1 -> 4, 1), and never grow from old to new: the oldest lines coarsest, the
newest one step each for as long as they fit. A range line's lists are shortened (fewer items, each
shorter, then counts only, then only its ids and step count) before lines are ever dropped —
they never are: every folded step stays inside some line's ids.

Errors are tracked across folds: an error stays *open* until a later step reruns the same
command, or the same test runner on the same targets or more (:func:`~._shell.reruns`),
without an error of that kind; then it is *fixed at* that step (:func:`resolve`).

The spans are the recap's data (:class:`Layer`, stored as JSON in the recap entry), so the
next fold merges from facts, never from recap text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from attrs import Factory, define, frozen

from livecontext.protocol.history import HistoryEntry

from ._facts import StepFacts, facts_of, step_line, steps_of
from ._shell import reruns

DATA_VERSION = 1
"""The version of the recap data's JSON; data of another version is not read (a fresh start)."""

LIST_CAP = 12
"""Most items a span keeps in each list (files, searches, actions); the most recent stay."""
ERROR_CAP = 6
"""Most distinct errors a span keeps (fixed ones are let go first)."""
KEY_CAP = 4
"""Most rerun keys an open error keeps."""
ITEM_CHARS = 100
"""The longest input or search (half as long) a span keeps."""
DATA_FACTOR = 4
"""The spans' data (JSON) is kept to at most this many times the characters of their lines'
limit: merging spans bounds it (a merged span keeps capped lists), so a recap's record in the
log does not grow with the thread."""
RANGE_CHARS = 320
"""The longest range line while there are other lines: a quarter of the limit, if less, but..."""
RANGE_FLOOR = 160
"""...at least this much (or half the limit, if less): a range line must still say what happened."""

_DETAIL = (  # actions, edited, read, searched, errors, inputs; characters an item keeps
    (8, 8, 6, 4, 4, 2, 64),
    (6, 6, 4, 3, 3, 1, 48),
    (4, 4, 2, 2, 2, 1, 36),
    (3, 3, 0, 0, 2, 1, 28),
    (2, 2, 0, 0, 1, 0, 24),
    (1, 1, 0, 0, 1, 0, 20),
)
"""The levels of a range line's detail, finest first; below them: counts only, then none."""


@define
class ErrorItem:
    """An error seen in some folded steps, and whether a later step fixed it."""

    kind: str
    """``ImportError``, or the start of a tool's error line."""
    where: str
    """The file it points at, or ``""``."""
    text: str
    """The newest error line of this kind and place."""
    at: str
    """The step it was first seen at."""
    keys: list[str] = Factory(list)
    """The rerun keys of the calls that reported it (a rerun of one may fix it)."""
    fixed: str = ""
    """The step whose rerun no longer reported it; ``""`` while it is open."""
    n: int = 1
    """How many calls reported it."""

    def label(self, chars: int) -> str:
        """``ImportError in src/c.py x2 (fixed at e31)``; with ``chars`` of 20 or fewer, no place."""
        where = f" in {_cut(self.where, chars)}" if self.where and chars > 20 else ""
        times = f" x{self.n}" if self.n > 1 else ""
        state = f"fixed at {self.fixed}" if self.fixed else "open"
        return f"{_cut(self.kind, chars)}{where}{times} ({state})"


@define
class Span:
    """Consecutive folded steps, shown as one line."""

    first: str
    """The id of its first step."""
    last: str
    """The id of its last step."""
    steps: int = 1
    line: str = ""
    """For one step: its line (:func:`~._facts.step_line`); ``""`` for a range."""
    calls: int = 0
    actions: dict[str, int] = Factory(dict)
    """Calls by what they ran (``pytest``, ``view``, a tool's name)."""
    edited: list[str] = Factory(list)
    read: list[str] = Factory(list)
    """Paths named but not edited."""
    searched: list[str] = Factory(list)
    inputs: list[str] = Factory(list)
    """The first lines of its inputs."""
    errors: list[ErrorItem] = Factory(list)
    test: str = ""
    """The newest test outcome: ``3 failed, 12 passed``."""
    test_run: str = ""
    """What ran it: ``pytest tests/test_a.py``."""
    test_at: str = ""
    more: list[str] = Factory(list)
    """The lists that lost items to their caps (shown with ``…``)."""


def span_of(facts: StepFacts) -> Span:
    """The span of one step."""
    span = Span(facts.id, facts.id, line=step_line(facts))
    if facts.kind == "input" and facts.said:
        span.inputs.append(_cut(facts.said, ITEM_CHARS))
    for call in facts.calls:
        span.calls += 1
        span.actions[call.action] = span.actions.get(call.action, 0) + 1
        _add(span.edited, call.writes)
        _add(span.read, [p for p in call.reads if p not in span.edited])
        _add(span.searched, [_cut(" ".join(p.split()), ITEM_CHARS // 2) for p in call.searched])
        if call.error is not None:
            add_error(span.errors, ErrorItem(call.error.kind, call.error.where, call.error.text, facts.id,
                                              list(call.keys)))
        if call.test:
            span.test, span.test_at = call.test, facts.id
            span.test_run = f"{call.action} {call.target}".strip()
    return span


def merge(old: Span, new: Span) -> Span:
    """One span standing for ``old`` and the ``new`` one right after it."""
    out = Span(old.first, new.last, old.steps + new.steps, calls=old.calls + new.calls)
    more = set(old.more) | set(new.more)
    actions = dict(old.actions)
    for name, n in new.actions.items():
        actions[name] = actions.get(name, 0) + n
    ranked = sorted(actions.items(), key=lambda kv: -kv[1])  # (stable: first seen first on a tie)
    out.actions = dict(ranked[:LIST_CAP])
    if len(ranked) > LIST_CAP:
        more.add("actions")
    for name in ("edited", "read", "searched", "inputs"):
        items: list[str] = []
        _add(items, getattr(old, name))
        _add(items, getattr(new, name))
        if name == "read":
            items = [p for p in items if p not in out.edited]
        if len(items) > LIST_CAP:
            items = items[-LIST_CAP:]
            more.add(name)
        setattr(out, name, items)
    out.errors = [ErrorItem(**vars_of(e)) for e in old.errors]
    for error in new.errors:
        add_error(out.errors, ErrorItem(**vars_of(error)))
    if len(out.errors) > ERROR_CAP:
        more.add("errors")
        while len(out.errors) > ERROR_CAP:
            fixed = [e for e in out.errors if e.fixed]
            out.errors.remove(fixed[0] if fixed else out.errors[0])
    newest = new if new.test else old
    out.test, out.test_run, out.test_at = newest.test, newest.test_run, newest.test_at
    out.more = sorted(more)
    return out


def resolve(errors: Iterable[ErrorItem], facts: StepFacts) -> None:
    """Mark fixed at ``facts``' step the open errors that one of its calls reran without
    reporting an error of their kind."""
    for call in facts.calls:
        if not call.keys:
            continue  # (a call without a result shows nothing fixed)
        for error in errors:
            if error.fixed or (call.error is not None and call.error.kind == error.kind):
                continue
            if any(reruns(later, earlier) for later in call.keys for earlier in error.keys):
                error.fixed = facts.id
                error.keys = []  # (a fixed error needs no rerun to be fixed: its keys go, the data stays small)


def render(span: Span, limit: int, start_detail: int = 0) -> str:
    """The span's line, as detailed as fits ``limit`` characters and ``start_detail`` allows
    (no ``- `` in front). Never less than a range's ids and step count, or a step's id: a
    caller that must fit a smaller limit shortens something else (``structured``, its task),
    and :data:`~._strategies.MIN_SUMMARY_CHARS` leaves room for them."""
    if span.line and span.steps == 1:  # (cut, if it must be, after its id: the step stays named)
        return span.line if len(span.line) <= limit else _cut(span.line, max(limit, len(span.first) + 2))
    for detail in range(start_detail, len(_DETAIL) + 2):
        line = range_line(span, detail)
        if len(line) <= limit:
            return line
    return line  # its ids and step count, whatever the limit: the steps stay represented


def range_line(span: Span, detail: int = 0) -> str:
    """A range line at ``detail`` (0: finest; one past the table: counts only; two past: none)."""
    head = f"{span.first}–{span.last} ({span.steps} steps)"
    if detail > len(_DETAIL):
        return head
    if detail == len(_DETAIL):
        counts = [f"{span.calls} calls"] if span.calls else []
        if span.edited:
            counts.append(f"{len(span.edited)}{'+' if 'edited' in span.more else ''} files edited")
        if span.errors:
            still = sum(1 for e in span.errors if not e.fixed)
            counts.append(f"{len(span.errors)} errors ({still} open)")
        return head + (": " + ", ".join(counts) if counts else "")
    n_actions, n_edited, n_read, n_searched, n_errors, n_inputs, chars = _DETAIL[detail]
    parts = []
    if span.inputs and n_inputs:
        parts.append("user: " + _listed([f'"{_cut(i, chars)}"' for i in span.inputs], n_inputs, "inputs" in span.more,
                                        newest=True))
    if span.calls:
        names = [f"{_cut(a, chars)} x{n}" if n > 1 else _cut(a, chars) for a, n in span.actions.items()]
        parts.append(f"{span.calls} calls ({_listed(names, n_actions, 'actions' in span.more)})")
    if span.edited:
        parts.append("edited " + _listed([_cut(p, chars) for p in span.edited], n_edited, "edited" in span.more,
                                         newest=True))
    if span.read and n_read:
        parts.append("read " + _listed([_cut(p, chars) for p in span.read], n_read, "read" in span.more, newest=True))
    if span.searched and n_searched:
        parts.append("searched " + _listed([f'"{_cut(s, chars)}"' for s in span.searched], n_searched,
                                           "searched" in span.more, newest=True))
    if span.errors:
        shown = sorted(reversed(span.errors), key=lambda e: bool(e.fixed))  # the open ones first, newest first
        parts.append("errors: " + _listed([e.label(chars) for e in shown], n_errors, "errors" in span.more))
    if span.test:
        run = f"{_cut(span.test_run, chars)}: " if span.test_run and n_read else ""
        parts.append(f"last tests: {run}{_cut(span.test, chars)} ({span.test_at})")
    return head + ": " + "; ".join(parts) if parts else head


def fit(spans: Sequence[Span], limit: int, cost: Callable[[str], int] = lambda line: len(line) + 1,
        start_detail: int = 0) -> tuple[list[Span], list[str]]:
    """Merge ``spans`` (oldest first) until their lines cost at most ``limit`` (see the module)
    and their data at most :data:`DATA_FACTOR` times that, in characters of JSON.

    ``cost`` is what one line costs where it is put (its length and a new line, by default);
    range lines are at most ``start_detail`` detailed. The spans and their lines are returned.
    One span left that still does not fit is shown with less detail, down to its ids and step
    count, and keeps fewer items in its lists.
    """
    spans = list(spans)
    line_limit = max(min(RANGE_CHARS, limit // 4), min(RANGE_FLOOR, limit // 2), 1)
    data_limit = DATA_FACTOR * limit
    lines = [render(s, line_limit, start_detail) for s in spans]
    costs = [cost(line) for line in lines]
    sizes = [_size(s) for s in spans]
    total, data = sum(costs), sum(sizes)
    while (total > limit or data > data_limit) and len(spans) > 1:
        i = _pick(spans)
        merged = merge(spans[i], spans[i + 1])
        line = render(merged, line_limit, start_detail)
        size = _size(merged)
        total += cost(line) - costs[i] - costs[i + 1]
        data += size - sizes[i] - sizes[i + 1]
        spans[i: i + 2], lines[i: i + 2], costs[i: i + 2], sizes[i: i + 2] = [merged], [line], [cost(line)], [size]
    if len(spans) == 1 and data > data_limit:
        _trim(spans[0], data_limit)
    if total > limit and spans:
        room = limit - (cost("") - len(""))
        lines = [render(spans[0], max(room, 1), start_detail)]
    return spans, lines


def _size(span: Span) -> int:
    return len(json.dumps(_span_json(span), ensure_ascii=False, separators=(",", ":")))


def _trim(span: Span, limit: int) -> None:
    """Drop the oldest items of ``span``'s longest lists until its data is at most ``limit``
    characters (or its lists are empty); the lists that lose items say so (``more``)."""
    while _size(span) > limit:
        strings = {"edited": span.edited, "read": span.read, "searched": span.searched, "inputs": span.inputs}
        data = _span_json(span)
        name = max(("actions", "errors", *strings), key=lambda k: len(json.dumps(data.get(k, ""), ensure_ascii=False)))
        if name not in data:
            return  # every list is empty
        if name == "actions":
            del span.actions[min(span.actions, key=span.actions.__getitem__)]
        elif name == "errors":
            fixed = [e for e in span.errors if e.fixed]
            span.errors.remove(fixed[0] if fixed else span.errors[0])
        else:
            del strings[name][0]
        span.more = sorted({*span.more, name})


def _pick(spans: Sequence[Span]) -> int:
    """Which neighbours to merge (see the module): the oldest pair whose older span is no
    larger than the newer and whose merge is no larger than the span before it, else the two
    oldest. Spans that never grow from old to new keep that order."""
    return next((i for i in range(1, len(spans) - 1) if spans[i].steps <= spans[i + 1].steps
                 and spans[i - 1].steps >= spans[i].steps + spans[i + 1].steps), 0) \
        if spans[0].steps > spans[1].steps else 0


# -- the recap's data ---------------------------------------------------------------------------------


@frozen
class Recap:
    """A recap as a strategy makes it: its text and its data (JSON text, see :class:`Layer`)."""

    text: str = ""
    data: str = ""


def add_steps(layer: Layer, entries: Sequence[HistoryEntry]) -> None:
    """Append a span per step of ``entries`` to ``layer``; each step first marks fixed the
    errors its calls reran without (see :func:`resolve`)."""
    for step in steps_of(entries):
        facts = facts_of(step)
        resolve(layer.errors(), facts)
        layer.spans.append(span_of(facts))


@define
class Layer:
    """A recap's data: its spans and what the strategy keeps besides (JSON in the recap entry)."""

    spans: list[Span] = Factory(list)
    model_calls: int | None = None
    """Calls made to the recap model for this thread's recaps so far (``None``: not counted
    here; see the maintainer)."""
    extra: dict[str, Any] = Factory(dict)
    """The strategy's own fields (``structured``'s lists)."""

    def dump(self) -> str:
        """The data as JSON text."""
        out: dict[str, Any] = {"v": DATA_VERSION, "spans": [_span_json(s) for s in self.spans]}
        if self.model_calls is not None:
            out["model_calls"] = self.model_calls
        out.update(self.extra)
        return json.dumps(out, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def load(cls, data: str) -> Layer:
        """The layer in ``data``; an empty one when ``data`` is empty, not JSON, of another
        version or of the wrong shape (a fresh start, never a crash)."""
        try:
            raw = json.loads(data) if data.strip() else {}
            if not isinstance(raw, dict) or raw.get("v") != DATA_VERSION:
                return cls()
            calls = raw.get("model_calls")
            extra = {k: v for k, v in raw.items() if k not in ("v", "spans", "model_calls")}
            return cls([_span_from(s) for s in raw["spans"]],
                       calls if isinstance(calls, int) and not isinstance(calls, bool) and calls >= 0 else None, extra)
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            return cls()

    def errors(self) -> list[ErrorItem]:
        """Every error the spans keep, oldest first."""
        return [e for s in self.spans for e in s.errors]


def vars_of(error: ErrorItem) -> dict[str, Any]:
    """An error's fields (a copy: the keys list is not shared)."""
    return {"kind": error.kind, "where": error.where, "text": error.text, "at": error.at, "keys": list(error.keys),
            "fixed": error.fixed, "n": error.n}


def _span_json(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {"first": span.first, "last": span.last, "steps": span.steps}
    for name in ("line", "calls", "actions", "edited", "read", "searched", "inputs", "test", "test_run", "test_at",
                 "more"):
        value = getattr(span, name)
        if value:
            out[name] = value
    if span.errors:
        out["errors"] = [vars_of(e) for e in span.errors]
    return out


def _span_from(raw: dict[str, Any]) -> Span:
    def strings(name: str) -> list[str]:
        value = raw.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TypeError(f"{name} is not a list of strings")
        return list(value)

    first, last, steps = raw["first"], raw["last"], raw["steps"]
    if not (isinstance(first, str) and isinstance(last, str) and isinstance(steps, int) and steps >= 1):
        raise TypeError("a span needs first, last and steps")
    actions = raw.get("actions", {})
    if not isinstance(actions, dict) or not all(isinstance(v, int) for v in actions.values()):
        raise TypeError("actions is not a map of counts")
    errors = [ErrorItem(str(e["kind"]), str(e["where"]), str(e["text"]), str(e["at"]),
                        [str(k) for k in e["keys"]], str(e["fixed"]), int(e["n"])) for e in raw.get("errors", [])]
    return Span(first, last, steps, str(raw.get("line", "")), int(raw.get("calls", 0)), dict(actions),
                strings("edited"), strings("read"), strings("searched"), strings("inputs"), errors,
                str(raw.get("test", "")), str(raw.get("test_run", "")), str(raw.get("test_at", "")), strings("more"))


def _add(items: list[str], new: Iterable[str]) -> None:
    """Append ``new`` to ``items``; an item already there moves to the end (it is newer now)."""
    for item in new:
        if item in items:
            items.remove(item)
        items.append(item)


def add_error(errors: list[ErrorItem], new: ErrorItem) -> None:
    """Add ``new`` to ``errors``, or count it into the error of its kind and place there: the
    first seen, the newest text, open if either is, the keys of both."""
    for error in errors:
        if error.kind == new.kind and error.where == new.where:
            error.n += new.n
            error.text = new.text
            error.keys = (error.keys + [k for k in new.keys if k not in error.keys])[-KEY_CAP:]
            error.fixed = new.fixed if error.fixed else ""
            return
    errors.append(new)


def _listed(items: list[str], cap: int, more: bool, *, newest: bool = False) -> str:
    """``items`` joined, at most ``cap`` of them (the newest ones if ``newest``), ``…`` for the rest."""
    if len(items) > cap:
        items, more = (items[-cap:] if newest else items[:cap]), True
    return ", ".join(items) + (", …" if more and items else "…" if more else "")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"
