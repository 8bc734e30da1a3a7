"""Unified diffs of the notebook's edits: :func:`difflib.unified_diff`'s lines, cheaper.

An edit of the notebook replaces one passage: the lines before it and after it are the same
in the old and the new text, and the lines between usually appear nowhere in the other text.
For such an edit :class:`difflib.SequenceMatcher` can only find the common head and the common
tail (see :func:`_edit_span`), so the diff is one hunk that this module writes directly. Any
other edit goes to difflib itself.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

CONTEXT = 3
"""Lines of context around a change (difflib's default)."""
_AUTOJUNK_LINES = 200
"""From this many new lines on, difflib treats frequent lines as junk: left to it."""


def unified_diff(old: Sequence[str], new: Sequence[str], fromfile: str, tofile: str) -> Iterable[str]:
    """``difflib.unified_diff(old, new, fromfile=fromfile, tofile=tofile)``: the same lines."""
    span = _edit_span(old, new)
    if span is None:
        return difflib.unified_diff(old, new, fromfile=fromfile, tofile=tofile)
    head, tail = span
    old_stop, new_stop = len(old) - tail, len(new) - tail
    first = max(0, head - CONTEXT)  # (the same in both: the heads are the same)
    last_old, last_new = min(len(old), old_stop + CONTEXT), min(len(new), new_stop + CONTEXT)
    lines = [f"--- {fromfile}\n", f"+++ {tofile}\n",
             f"@@ -{_range(first, last_old)} +{_range(first, last_new)} @@\n"]
    lines += map(_SAME, old[first:head])
    lines += map(_GONE, old[head:old_stop])
    lines += map(_ADDED, new[head:new_stop])
    lines += map(_SAME, old[old_stop:last_old])
    return lines


_SAME, _GONE, _ADDED = " ".__add__, "-".__add__, "+".__add__


def _edit_span(old: Sequence[str], new: Sequence[str]) -> tuple[int, int] | None:
    """``(head, tail)``: how many lines the texts share at the start and at the end, when
    :class:`difflib.SequenceMatcher` would match exactly those; ``None`` when it might not.

    It would when the texts differ, one of them is empty (nothing to match), or both have
    changed lines between the head and the tail and no changed line appears anywhere in the
    other text. Then every matching block of lines lies within the head or the tail of each
    text (a changed line matches nothing, so no block crosses one), and the matcher, which
    takes the longest block first and the earliest on ties, takes the head and the tail whole:
    any other block is shorter than one of them or starts later (and it merges no junk: it
    judges no line junk below 200 lines).
    """
    if old == new or len(new) >= _AUTOJUNK_LINES:
        return None
    if not old or not new:
        return 0, 0
    head = 0
    for old_line, new_line in zip(old, new):
        if old_line != new_line:
            break
        head += 1
    tail, most = 0, min(len(old), len(new)) - head
    for old_line, new_line in zip(reversed(old), reversed(new)):
        if tail == most or old_line != new_line:
            break
        tail += 1
    changed_old, changed_new = old[head : len(old) - tail], new[head : len(new) - tail]
    if not changed_old or not changed_new:
        return None  # a pure insertion or deletion: the matcher may align repeated lines otherwise
    if not set(changed_old).isdisjoint(new) or not set(changed_new).isdisjoint(old):
        return None
    return head, tail


def _range(start: int, stop: int) -> str:
    """A hunk's range as unified diffs write it (difflib's ``_format_range_unified``)."""
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"
