"""Building entries' content at every level of detail, once, when they are written.

Levels are decided here and never by cutting text at render time: rendering only chooses
among them and adds up their cached token counts. Where a writer gives only the full text
(a tool returning plain text), the runtime makes the shorter levels:

- RECENT of a long text result is its head and tail lines with a marker saying how much was
  elided, at most :data:`RECENT_TOKENS` tokens and at most half the full text's (so a
  result's two texts never cost more than 1.5 times the one).
- RECENT of a long model input is made the same way (:func:`excerpt`), larger: at most
  :data:`INPUT_RECENT_TOKENS` and a quarter of the thread's budget. It is what is sent of an
  input that does not fit the room whole (never its one-line gist).
- GIST of a result is one line: the tool, its status, the output's size and the line that
  best says what happened (see :func:`~._text.salient_line`).
- A model output's tool-call arguments are valid JSON at every level; at RECENT and GIST its
  long strings are elided inside the JSON (``"cat > a.py <<EOF…[3,412 chars elided]"``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from livecontext.protocol.history import Content, LevelText, Notification, ToolCall, ToolSpec, ToolStatus
from livecontext.runtime.tokens import MESSAGE_OVERHEAD_TOKENS, TokenCounter

from ._text import meaningful, salient_line

GIST_CHARS = 160
"""The longest gist line, in characters."""

RECENT_TOKENS = 400
"""The most tokens a RECENT level made by the runtime from a text result may cost."""
HEAD_SHARE = 2 / 3
"""The share of an excerpt's tokens given to the head lines (the tail gets the rest: a log's
summary and a traceback's error are at its end)."""
LINE_CHARS = 400
"""A line longer than this is cut inside an excerpt (minified code, a one-line JSON blob)."""

INPUT_RECENT_TOKENS = 2000
"""The most tokens a model input's RECENT level may cost (a quarter of the default 8,000-token
budget). An input is the user's word, often the task: it gets five times a tool result's
excerpt. A quarter, and no more, so that an input cut to it still leaves the system prompt,
the tools, the pinned task and the steps their room (see :func:`input_recent_tokens`)."""
INPUT_BUDGET_SHARE = 4
"""A model input's RECENT costs at most the thread's budget divided by this."""

RECENT_STRING_CHARS = 400
"""At RECENT, a tool-call argument string longer than this is elided..."""
RECENT_KEEP_CHARS = 200
"""...to its first this many characters and a marker."""
GIST_STRING_CHARS = 120
"""At GIST, an argument string longer than this is elided..."""
GIST_KEEP_CHARS = 60
"""...to its first this many characters and a marker."""


def gist_line(text: str, limit: int = GIST_CHARS) -> str:
    """The first non-blank line of ``text``, shortened to ``limit`` characters."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return _cut(line, limit)
    return ""


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: limit - 1] + "…"


def notifications_text(notifications: Sequence[Notification]) -> str:
    """The block of notifications appended to an observation."""
    if not notifications:
        return ""
    lines = [f"- [{n.id} from {n.sender}] {n.text}" for n in notifications]
    return "[Notifications]\n" + "\n".join(lines)


def input_recent_tokens(budget: int | None) -> int:
    """The most a model input's RECENT may cost in a thread rendered under ``budget`` tokens
    (``None``: not known): :data:`INPUT_RECENT_TOKENS`, and at most a quarter of the budget."""
    if budget is None:
        return INPUT_RECENT_TOKENS
    return max(1, min(INPUT_RECENT_TOKENS, budget // INPUT_BUDGET_SHARE))


def input_content(text: str, notifications: Sequence[Notification], counter: TokenCounter,
                  recent_tokens: int = INPUT_RECENT_TOKENS) -> Content:
    """A model input: the text, then the notifications it delivers.

    RECENT is the same unless the text costs more than ``recent_tokens``: then its head and
    tail lines around a line saying how much was elided (:func:`excerpt`), the notifications
    whole after it (they are short, and each is delivered once).
    """
    note = notifications_text(notifications)
    full = "\n\n".join(part for part in (text, note) if part)
    cut = excerpt(text, counter, recent_tokens, line_chars=None) if text else text
    recent = full if cut == text else "\n\n".join(part for part in (cut, note) if part)
    gist_notes = f" (+{len(notifications)} notifications)" if notifications else ""
    gist = f"user: {gist_line(text)}{gist_notes}" if text else f"{len(notifications)} notifications"
    return counter.content(full, recent, gist)


def output_levels(text: str, tool_calls: Sequence[ToolCall],
                  counter: TokenCounter) -> tuple[Content, tuple[str, ...], tuple[str, ...]]:
    """A model output's content and its calls' arguments at RECENT and GIST.

    Returns ``(content, recent_arguments, gist_arguments)`` as
    :class:`~livecontext.protocol.history.ModelOutputEntry` keeps them: each level's token count
    includes its calls; an arguments tuple is empty when it equals the level above.
    """
    gist = gist_line(text)  # (an output that only calls tools shows its calls at every level)
    if not tool_calls:
        return counter.content(text, text, gist), (), ()
    live_args = tuple(c.arguments for c in tool_calls)
    recent_args = tuple(elide_arguments(a, RECENT_STRING_CHARS, RECENT_KEEP_CHARS) for a in live_args)
    gist_args = tuple(elide_arguments(a, GIST_STRING_CHARS, GIST_KEEP_CHARS) for a in recent_args)

    def calls_tokens(arguments: tuple[str, ...]) -> int:
        return sum(counter.count(c.name) + counter.count(a) + 3 for c, a in zip(tool_calls, arguments))

    live_calls = calls_tokens(live_args)
    recent_calls = live_calls if recent_args == live_args else calls_tokens(recent_args)
    gist_calls = recent_calls if gist_args == recent_args else calls_tokens(gist_args)
    text_tokens = counter.count(text)
    live = LevelText(text, text_tokens + live_calls)
    recent = live if recent_calls == live_calls else LevelText(text, text_tokens + recent_calls)
    short = LevelText(gist, (text_tokens if gist == text else counter.count(gist)) + gist_calls)
    if short == recent:
        short = recent
    return (Content(live, recent, short),
            () if recent_args == live_args else recent_args,
            () if gist_args == recent_args else gist_args)


def output_content(text: str, tool_calls: Sequence[ToolCall], counter: TokenCounter) -> Content:
    """A model output's content (see :func:`output_levels`)."""
    return output_levels(text, tool_calls, counter)[0]


def results_content(notifications: Sequence[Notification], counter: TokenCounter) -> Content:
    """A tool-results entry's own content: the notifications it delivers (results carry theirs)."""
    note = notifications_text(notifications)
    gist = f"{len(notifications)} notifications" if notifications else ""
    return counter.content(note, note, gist)


def tools_tokens(specs: Sequence[ToolSpec], counter: TokenCounter) -> int:
    """What the tools' schemas cost in a model call: each as the JSON a chat API is sent
    (``{"type": "function", "function": {...}}``), plus a message's overhead."""
    total = 0
    for spec in specs:
        text = (f'{{"type":"function","function":{{"name":{json.dumps(spec.name)},'
                f'"description":{json.dumps(spec.description, ensure_ascii=False)},'
                f'"parameters":{spec.parameters_json}}}}}')
        total += counter.count(text) + MESSAGE_OVERHEAD_TOKENS
    return total


# -- results given as plain text -----------------------------------------------------------------


def result_content(name: str, status: ToolStatus, live: str, recent: str | None, gist: str | None,
                   counter: TokenCounter) -> Content:
    """A tool result's content; levels not given are made from ``live`` (see the module)."""
    if recent is None:
        recent = excerpt(live, counter)
    if gist is None:
        gist = result_gist(name, status, live)
    return counter.content(live, recent, gist)


def result_gist(name: str, status: ToolStatus, text: str) -> str:
    """One line for a result: ``bash ok, 212 lines: 3 failed, 12 passed in 0.52s``.

    A one-line output is its own size: ``notebook_replace failed: old_text not found``.
    """
    lines = text.splitlines()
    head = f"{name} {status.value}"
    if len(lines) > 1 or len(text) > GIST_CHARS:
        size = f"{len(lines):,} lines" if len(lines) > 1 else f"{len(text):,} chars"
        head = f"{head}, {size}"
    said = salient_line(text)
    if not said:
        return f"{head} (no output)" if not text.strip() else head
    return f"{head}: {_cut(said, GIST_CHARS - min(len(head), GIST_CHARS // 2) - 2)}"


def excerpt(text: str, counter: TokenCounter, max_tokens: int = RECENT_TOKENS,
            line_chars: int | None = LINE_CHARS) -> str:
    """``text`` itself if it costs at most ``max_tokens``, else its head and tail lines around
    a marker saying how many lines and characters were left out (``… [269 lines, 8,802 chars
    elided] …``), costing at most ``max_tokens`` and half of ``text``'s tokens.

    A line longer than ``line_chars`` is cut to it (``None``: a line is cut only where the
    room ends; a person's input is prose, a paragraph one long line, not a log's JSON blob)."""
    total = counter.count(text)
    if total <= max_tokens:
        return text
    room = min(max_tokens, total // 2)
    lines = text.splitlines()
    if line_chars is None and len(lines) == 1:
        return _around_chars(text, counter, room)
    head = _take(lines, counter, int(room * HEAD_SHARE), line_chars)
    used = sum(counter.count(shown) + 1 for shown, _ in head)
    tail = _take(lines[len(head):][::-1], counter, room - used, line_chars)[::-1]
    out = _around(text, len(lines), head, tail)
    while (head or tail) and counter.count(out) > room:  # (the marker costs a few tokens too)
        if len(head) >= len(tail):
            head.pop()  # the innermost line of the longer part goes
        else:
            tail.pop(0)
        out = _around(text, len(lines), head, tail)
    return out


def _around_chars(line: str, counter: TokenCounter, room: int) -> str:
    """One long line (a paragraph pasted whole) in ``room`` tokens: its first and last
    characters around the marker, as :func:`excerpt` shows lines (its end often asks the
    question)."""
    spare = counter.count(_marker(0, len(line))) + 4  # (and the "…" and newlines around it)
    head_room = int((room - spare) * HEAD_SHARE)
    head = _fit_chars(line, counter, head_room, from_end=False)
    tail = _fit_chars(line[head:], counter, room - spare - head_room, from_end=True)
    while True:
        shown_tail = line[len(line) - tail:] if tail else ""
        out = f"{line[:head]}…\n{_marker(0, len(line) - head - tail)}\n…{shown_tail}"
        if counter.count(out) <= room or not (head or tail):
            return out
        head, tail = head * 9 // 10, tail * 9 // 10


def _fit_chars(text: str, counter: TokenCounter, room: int, *, from_end: bool) -> int:
    """How many characters of ``text``'s start (or end) cost at most ``room`` tokens (a
    binary search: a few counts of at most ``room * 8`` characters)."""
    low, high = 0, min(len(text), max(room, 0) * 8)
    while low < high:
        mid = (low + high + 1) // 2
        if counter.count(text[len(text) - mid:] if from_end else text[:mid]) <= room:
            low = mid
        else:
            high = mid - 1
    return low


_Kept = tuple[str, int]
"""A line as shown, and how many characters of the original line it shows."""


def _around(text: str, lines: int, head: list[_Kept], tail: list[_Kept]) -> str:
    """The head and tail lines around the marker of what is not shown between them."""
    shown = len(head) + len(tail)
    kept = sum(chars for _, chars in head) + sum(chars for _, chars in tail) + max(shown - 1, 0)  # (+ newlines)
    marker = _marker(lines - len(head) - len(tail), max(len(text) - kept, 0))
    return "\n".join([*(shown for shown, _ in head), marker, *(shown for shown, _ in tail)])


def _marker(lines: int, chars: int) -> str:
    what = f"{lines:,} lines, {chars:,} chars" if lines > 0 else f"{chars:,} chars"
    return f"… [{what} elided] …"


def _take(lines: Sequence[str], counter: TokenCounter, room: int, line_chars: int | None) -> list[_Kept]:
    """The first lines of ``lines`` that fit ``room`` tokens (each line with its newline); a
    line too long to fit (or longer than ``line_chars``) is cut, ending in ``…``, and taking
    stops at the first that does not fit even cut."""
    taken: list[_Kept] = []
    used = 0
    for line in lines:
        shown = line if line_chars is None or len(line) <= line_chars else line[:line_chars] + "…"
        cost = counter.count(shown) + 1
        if used + cost > room:
            left = room - used - 2
            if left > 4 and meaningful(line):
                cut = line[: max(left * 3, 1)]  # ~3 chars a token in code and logs
                while cut and counter.count(cut + "…") + 1 > room - used:
                    cut = cut[: len(cut) * 3 // 4]
                if cut:
                    taken.append((cut + "…", len(cut)))
            break
        taken.append((shown, len(line) if line_chars is None else min(len(line), line_chars)))
        used += cost
    return taken


# -- tool-call arguments ---------------------------------------------------------------------------


def elide_arguments(arguments: str, max_chars: int, keep: int) -> str:
    """``arguments`` (a call's JSON text) with every string longer than ``max_chars`` cut to its
    first ``keep`` characters and a marker (``"…[3,412 chars elided]"``), still valid JSON.

    Returns ``arguments`` unchanged when nothing is that long. Text that is not JSON, if long,
    becomes a JSON object holding its elided head under ``"_unparsed"``.
    """
    if len(arguments) <= max_chars:
        return arguments
    try:
        data = json.loads(arguments)
    except (ValueError, RecursionError):
        return json.dumps({"_unparsed": _elided(arguments, keep)}, ensure_ascii=False)
    changed, value = _elide(data, max_chars, keep)
    if not changed:
        return arguments
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _elided(text: str, keep: int) -> str:
    return f"{text[:keep]}…[{len(text) - keep:,} chars elided]"


def _elide(value: Any, max_chars: int, keep: int) -> tuple[bool, Any]:
    if isinstance(value, str):
        if len(value) > max_chars:
            return True, _elided(value, keep)
        return False, value
    if isinstance(value, list):
        pairs = [_elide(v, max_chars, keep) for v in value]
        return any(c for c, _ in pairs), [v for _, v in pairs]
    if isinstance(value, dict):
        items = {k: _elide(v, max_chars, keep) for k, v in value.items()}
        return any(c for c, _ in items.values()), {k: v for k, (_, v) in items.items()}
    return False, value
