"""How a batch of entries becomes recap text (seed note 004): three strategies."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from livecontext.protocol import (
    ChatMessage,
    HistoryEntry,
    Level,
    ModelInputEntry,
    ModelOutputEntry,
    ModelRequest,
    Role,
    ToolResultsEntry,
    ToolStatus,
)
from livecontext.runtime.models import ModelClient
from livecontext.runtime.tokens import TokenCounter

STRATEGIES = ("simple_extract", "model_summary", "structured")
"""The recap strategies."""


def _lines(entries: Sequence[HistoryEntry]) -> list[str]:
    out = []
    for e in entries:
        if isinstance(e, ModelInputEntry):
            out.append(f"- {e.id} input: {e.content.gist.text}")
        elif isinstance(e, ModelOutputEntry):
            calls = ", ".join(c.name for c in e.tool_calls)
            suffix = f" [called {calls}]" if calls else ""
            out.append(f"- {e.id} agent: {e.content.gist.text}{suffix}")
        elif isinstance(e, ToolResultsEntry):
            for r in e.results:
                out.append(f"- {e.id} {r.name} {r.status.value}: {r.content.gist.text}")
    return out


_DROPPED = re.compile(r"^- \((\d+) earlier items summarised away\)$")


def bound_lines(lines: list[str], max_chars: int) -> str:
    """Join ``lines``, dropping the oldest into a count line until the text fits ``max_chars``.

    A count line at the head of ``lines`` (from an earlier call) is carried over, so the count
    says how many items were ever dropped, not only this time.
    """
    dropped = 0
    if lines and (head := _DROPPED.match(lines[0])):
        dropped, lines = int(head.group(1)), lines[1:]
    while True:
        count = [f"- ({dropped} earlier items summarised away)"] if dropped else []
        text = "\n".join(count + lines)
        if len(text) <= max_chars or not lines:
            return text[:max_chars]
        lines = lines[1:]
        dropped += 1


def simple_extract(previous: str, entries: Sequence[HistoryEntry], max_chars: int) -> str:
    """The gist line of each entry, appended to the previous recap; no model."""
    lines = [line for line in previous.splitlines() if line.strip()] + _lines(entries)
    return bound_lines(lines, max_chars)


def structured(previous: str, entries: Sequence[HistoryEntry], max_chars: int) -> str:
    """A JSON recap: task state, progress, key results, open questions; no model.

    Past ``max_chars`` the oldest items of the longest list go first, then the task state is
    shortened; the text is always valid JSON of at most ``max_chars`` characters (``{}`` when
    not even the empty fields fit).
    """
    try:
        data = json.loads(previous) if previous.strip() else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    fields = {k: _strings(data.get(k)) for k in ("progress", "key_results", "open_questions")}
    task = str(data.get("task_state", ""))
    for e in entries:
        if isinstance(e, ModelInputEntry) and e.text:
            task = e.content.gist.text
        elif isinstance(e, ModelOutputEntry):
            fields["progress"].append(e.content.gist.text or ", ".join(c.name for c in e.tool_calls))
            fields["open_questions"] += [ln.strip() for ln in e.content.live.text.splitlines() if ln.strip().endswith("?")]
        elif isinstance(e, ToolResultsEntry):
            for r in e.results:
                target = "key_results" if r.status is ToolStatus.OK else "open_questions"
                fields[target].append(f"{r.name} {r.status.value}: {r.content.gist.text}")
    while True:
        text = _structured_text(task, fields)
        if len(text) <= max_chars:
            return text
        longest = max(fields, key=lambda k: len(fields[k]))
        if not fields[longest]:
            return _shortened_task(task, fields, max_chars)
        fields[longest].pop(0)


def _strings(value: object) -> list[str]:
    """The strings of a list read back from an earlier recap (anything else is dropped)."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _structured_text(task: str, fields: dict[str, list[str]]) -> str:
    return json.dumps({"task_state": task, **fields}, ensure_ascii=False)


def _shortened_task(task: str, fields: dict[str, list[str]], max_chars: int) -> str:
    """The longest prefix of ``task`` whose JSON fits (escapes make the JSON longer than it)."""
    if len(_structured_text("", fields)) > max_chars:
        return "{}" if max_chars >= 2 else ""
    lo, hi = 0, len(task)
    while lo < hi:  # the largest n whose text fits
        mid = (lo + hi + 1) // 2
        if len(_structured_text(task[:mid], fields)) <= max_chars:
            lo = mid
        else:
            hi = mid - 1
    return _structured_text(task[:lo], fields)


async def model_summary(previous: str, entries: Sequence[HistoryEntry], max_chars: int, *,
                        model: ModelClient, counter: TokenCounter, budget: int, call_index: int,
                        thread_id: str) -> str:
    """A model call that summarises the previous recap and the entries within ``budget`` tokens."""
    texts: list[str] = []
    used = counter.count(previous)
    detailed = True
    for e in reversed(entries):  # newest first, so the budget keeps the most recent detail
        for level in ((Level.RECENT, Level.GIST) if detailed else (Level.GIST,)):
            text = f"[{e.id}] {e.content.at(level).text}"
            if isinstance(e, ToolResultsEntry):
                text += "\n" + "\n".join(f"{r.name} {r.status.value}: {r.content.at(level).text}" for r in e.results)
            tokens = counter.count(text)
            if used + tokens <= budget:
                break
            detailed = False  # older entries get their gist only
        else:
            break  # not even the gist fits: the older entries are summarised by their absence
        texts.insert(0, text)
        used += tokens
    prompt = (
        f"Summarise the agent's earlier steps for its own future reference, in at most {max_chars} "
        "characters. Keep decisions, results and open questions; drop chatter."
    )
    body = (f"Previous recap:\n{previous}\n\n" if previous else "") + "Steps:\n" + "\n\n".join(texts)
    request = ModelRequest((ChatMessage(Role.SYSTEM, prompt), ChatMessage(Role.USER, body)), (),
                           call_index, thread_id)
    reply = await model.complete(request)
    text = reply.text.strip()
    if len(text) > max_chars:  # the model overshot: keep the newest part, at a line boundary
        text = bound_lines(text.splitlines(), max_chars)
    return text
