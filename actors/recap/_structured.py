"""The ``structured`` recap: JSON fields filled from the folded steps' content; no model.

Its text is one JSON object, always valid and at most ``max_chars`` characters::

    {"task": "Fix the cache key bug: ...",
     "decisions": ["e12: The function is called normalise, not norm."],
     "files": {"edited": ["src/cache.py"], "touched": ["src/util.py", "tests/"]},
     "identifiers": ["def make_key"],
     "errors": [{"error": "ImportError: cannot import name 'norm' ...", "in": "src/cache.py", "at": "e8",
                 "resolved": true, "fixed_at": "e14"}],
     "results": ["e25 pytest tests/test_cache.py: 12 passed"],
     "open_questions": ["e23: Is the float case meant to compare equal to the int case?"],
     "steps": ["e2–e21 (9 steps): 12 calls (grep x3, view x3, …); edited src/cache.py; …", "e23 ..."]}

- ``task``: the pinned (CRITICAL) inputs, verbatim if they are short, else their first
  :data:`TASK_CHARS` characters; with none pinned, the first input this thread ever folded.
- ``decisions``: the first sentences of the model's texts that say more than their calls do
  (:func:`~._facts.is_decision`); ``open_questions``: the questions they ask; each once, at
  the newest step that said it.
- ``files``, ``identifiers`` (what was searched for) and ``errors`` (one per kind and place,
  with how often, where first, and whether a later rerun fixed it) come from the summary
  layer's spans (:mod:`._layer`); ``results`` are the test outcomes, each with the step and
  what ran.
- ``steps``: the summary layer's lines, so every folded step stays represented here too.

Past ``max_chars``: the steps take what the fields leave, and at least a third; then the oldest
item of the longest list goes (errors: the fixed ones first), one at a time; then the steps
merge further, down to a quarter; then the task is shortened to the longest start that fits. The lists in the
data are the ones shown, so the data stays bounded too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from livecontext.protocol.history import HistoryEntry, ModelInputEntry

from ._facts import facts_of, steps_of
from ._layer import ErrorItem, Layer, Recap, Span, add_error, fit, resolve, span_of, vars_of

TASK_CHARS = 300
"""The longest task kept from the pinned inputs (or the first folded input)."""
LIST_CAP = 40
"""Most items kept in each of ``structured``'s own lists, before any fitting."""
ITEM_CHARS = 200
"""The longest item of a list."""
STEPS_DETAIL = 2
"""How detailed ``structured``'s range lines start: its fields already list files and errors."""

_OWN = ("decisions", "results", "open_questions")


def structured(previous: Recap, entries: Sequence[HistoryEntry], max_chars: int,
               pinned: Sequence[str] = ()) -> Recap:
    """A JSON recap of the previous one and ``entries`` (see the module); ``pinned`` are the
    texts of the thread's pinned inputs (they are never folded, so the maintainer reads them).

    An invalid previous recap (not JSON, another version, the wrong shape) starts fresh.
    """
    layer = Layer.load(previous.data)
    own = {name: _strings(layer.extra.get(name)) for name in _OWN}
    first_input = layer.extra.get("first_input")
    first_input = first_input if isinstance(first_input, str) else ""
    for step in steps_of(entries):
        facts = facts_of(step)
        resolve(layer.errors(), facts)
        layer.spans.append(span_of(facts))
        head = step[0]
        if isinstance(head, ModelInputEntry) and head.text.strip() and not first_input:
            first_input = _cut(head.text.strip(), TASK_CHARS)
        if facts.decision:
            _renew(own["decisions"], _cut(f"{facts.id}: {facts.said}", ITEM_CHARS))
        for question in facts.questions:
            _renew(own["open_questions"], _cut(f"{facts.id}: {question}", ITEM_CHARS))
        own["results"] += [_cut(f"{facts.id} {c.action}{' ' + c.target if c.target else ''}: {c.test}", ITEM_CHARS)
                           for c in facts.calls if c.test]
    own = {name: items[-LIST_CAP:] for name, items in own.items()}
    pinned_text = "\n\n".join(p.strip() for p in pinned if p.strip())
    task = _cut(pinned_text, TASK_CHARS) if pinned_text else first_input
    text, layer.spans, own = _fitted(task, own, layer.spans, max_chars)
    layer.extra = {"first_input": first_input, **own}
    return Recap(text, layer.dump())


def _fitted(task: str, own: dict[str, list[str]], spans: list[Span],
            max_chars: int) -> tuple[str, list[Span], dict[str, list[str]]]:
    """The JSON text within ``max_chars``, and the spans and lists it shows (see the module)."""
    views = _views(spans)
    spans, lines = _steps(spans, max(max_chars - _rest(task, own, views), max_chars // 3))
    while len(_text(task, own, views, lines)) > max_chars and _drop_oldest(own, views):
        pass
    if len(_text(task, own, views, lines)) > max_chars:  # (the task gives way below a quarter)
        spans, lines = _steps(spans, max(max_chars - _rest(task, own, views), max_chars // 4))
    text = _text(task, own, views, lines)
    if len(text) > max_chars:
        text = _text(_shortened(task, own, views, lines, max_chars), own, views, lines)
    return text, spans, own


def _rest(task: str, own: dict[str, list[str]], views: dict[str, list[Any]]) -> int:
    """The length of the JSON text but its step lines and their list's brackets."""
    return len(_text(task, own, views, [])) - len("[]")


def _steps(spans: list[Span], room: int) -> tuple[list[Span], list[str]]:
    """The spans merged until their lines, as a JSON list (``["a", "b"]``: each string and two
    characters), cost at most ``room``."""
    return fit(spans, max(room, 1), cost=lambda line: len(json.dumps(line, ensure_ascii=False)) + 2,
               start_detail=STEPS_DETAIL)


def _views(spans: list[Span]) -> dict[str, list[Any]]:
    """The lists the spans hold, oldest first: files edited and touched, identifiers, errors."""
    edited: list[str] = []
    touched: list[str] = []
    searched: list[str] = []
    for span in spans:
        edited = [p for p in edited if p not in span.edited] + span.edited
        touched = [p for p in touched if p not in span.read] + span.read
        searched = [s for s in searched if s not in span.searched] + span.searched
    touched = [p for p in touched if p not in edited]
    errors: list[ErrorItem] = []
    for span in spans:  # (one item per kind and place: spans apart may have seen the same error)
        for error in span.errors:
            add_error(errors, ErrorItem(**vars_of(error)))
    return {"edited": edited, "touched": touched, "identifiers": searched, "errors": errors}


def _drop_oldest(own: dict[str, list[str]], views: dict[str, list[Any]]) -> bool:
    """Drop the oldest item of the longest list (of errors, a fixed one first); ``False`` when
    every list is empty."""
    lists = {**own, **views}
    name = max(lists, key=lambda k: len(json.dumps(lists[k] if k != "errors" else [_error(e) for e in lists[k]],
                                                   ensure_ascii=False)) if lists[k] else -1)
    items = lists[name]
    if not items:
        return False
    fixed = [e for e in items if name == "errors" and e.fixed]
    items.remove(fixed[0] if fixed else items[0])
    return True


def _text(task: str, own: dict[str, list[str]], views: dict[str, list[Any]], lines: list[str]) -> str:
    return json.dumps({
        "task": task,
        "decisions": own["decisions"],
        "files": {"edited": views["edited"], "touched": views["touched"]},
        "identifiers": views["identifiers"],
        "errors": [_error(e) for e in views["errors"]],
        "results": own["results"],
        "open_questions": own["open_questions"],
        "steps": lines,
    }, ensure_ascii=False)


def _error(e: ErrorItem) -> dict[str, Any]:
    out: dict[str, Any] = {"error": e.text}
    if e.where:
        out["in"] = e.where
    out["at"] = e.at
    if e.n > 1:
        out["times"] = e.n
    out["resolved"] = bool(e.fixed)
    if e.fixed:
        out["fixed_at"] = e.fixed
    return out


def _shortened(task: str, own: dict[str, list[str]], views: dict[str, list[Any]], lines: list[str],
               max_chars: int) -> str:
    """The longest start of ``task`` whose JSON fits ``max_chars`` (escapes make the JSON
    longer than the text, so the length is searched, not computed)."""
    lo, hi = 0, len(task)
    while lo < hi:  # the largest n whose text fits
        mid = (lo + hi + 1) // 2
        if len(_text(task[:mid], own, views, lines)) <= max_chars:
            lo = mid
        else:
            hi = mid - 1
    return task[:lo]


def _renew(items: list[str], item: str) -> None:
    """Append ``item`` (``eN: text``), and let an older item saying the same text go: a
    decision or question said again is kept once, at its newest step."""
    said = item.split(": ", 1)[1]
    items[:] = [old for old in items if old.split(": ", 1)[-1] != said] + [item]


def _strings(value: object) -> list[str]:
    """The strings of a list read back from an earlier recap (anything else is dropped)."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
