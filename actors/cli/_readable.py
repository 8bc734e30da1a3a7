"""What ``history``, ``audit`` and ``state`` print for a person (``--json`` prints for scripts).

Each printer is given what the command read, and prints through a rich console: in colour on
a terminal, plain text into a pipe or a file. Long texts are shortened with a note of how much
was left out (``history --full`` shows them whole; the JSON forms always do).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any

from rich.console import Console
from rich.text import Text

from livecontext.protocol.history import (
    HistoryEntry,
    ModelInputEntry,
    ModelOutputEntry,
    Notification,
    RecapEntry,
    Retention,
    ToolResultsEntry,
    ToolStatus,
)

from ._main import reader_gone

TEXT_CHARS = 400
"""The most of an entry's text, a tool call's arguments or a result that ``history`` shows
without ``--full``."""
TEXT_LINES = 10
"""The most lines of one such text shown without ``--full``."""
SUMMARY_CHARS = 200
"""The most of a record's summary one ``audit`` line shows."""
APP_CHARS = 80
"""The most of an app's state one ``state`` line shows."""

_INDENT = "    "
_STATUS_STYLE = {ToolStatus.OK.value: "green", ToolStatus.FAILED.value: "red",
                 ToolStatus.SKIPPED.value: "yellow", ToolStatus.INTERRUPTED.value: "magenta"}


class _Console(Console):
    """rich's console, ending as the CLI's JSON output does when what reads it stops reading."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        reader_gone()


def readable_console(file: IO[str] | None = None) -> Console:
    """A console on ``file`` (default: stdout): colour on a terminal, none in a pipe; lines
    are never cut to the console's width (a pipe's lines stay whole, for ``grep``); ``| head``
    ends it quietly."""
    return _Console(file=file, highlight=False, soft_wrap=True, emoji=False)


def _say(console: Console, line: Text | str, style: str = "") -> None:
    """Print one line (or block) as it is (never read as rich markup: a text may hold
    ``[brackets]``): through rich on a terminal, as plain text otherwise (rich's rendering
    costs about a millisecond an entry, which a long history piped to a file or to ``grep``
    need not pay)."""
    if console.color_system is not None:
        console.print(Text(line, style=style) if isinstance(line, str) else line)
    else:
        console.file.write((line.plain if isinstance(line, Text) else line) + "\n")


def shorten(text: str, full: bool = False, chars: int = TEXT_CHARS, lines: int = TEXT_LINES) -> str:
    """``text``, or its first ``chars`` characters (and at most ``lines`` lines) and a note
    of how many more there are."""
    if full:
        return text
    kept = text[:chars]
    cut = kept.split("\n")
    if len(cut) > lines:
        kept = "\n".join(cut[:lines])
    if len(kept) == len(text):
        return text
    return f"{kept}… [{len(text) - len(kept):,} more chars; --full shows all]"


def one_line(text: str, chars: int) -> str:
    """``text`` on one line (its white space collapsed), shortened to ``chars`` characters
    with a note of how many more there were."""
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else f"{flat[:chars]}… [{len(flat) - chars:,} more chars]"


def _time(at: dt.datetime) -> str:
    return at.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _body(console: Console, text: str, style: str = "") -> None:
    """Indented text, each of its lines."""
    _say(console, "\n".join(_INDENT + line for line in text.split("\n")), style)


# -- history -------------------------------------------------------------------------------


def print_history(console: Console, thread_id: str, seq: int, entries: Sequence[HistoryEntry],
                  undecoded: Iterable[dict[str, Any]], *, full: bool, seqs: Mapping[str, int] | None = None) -> None:
    """A thread's entries as a transcript: a block per entry (its id and the seq of the
    record that added it, from ``seqs``; what it is, who wrote it and when; then its text),
    folded ones marked; then the effects not decoded here."""
    folded = sum(1 for e in entries if e.folded)
    _say(console, Text.assemble((f"thread {thread_id}", "bold"), f" as of seq {seq}: {len(entries)} entries"
                                + (f" ({folded} folded into recaps)" if folded else "")))
    for entry in entries:
        _say(console, "")
        _print_entry(console, entry, full, (seqs or {}).get(entry.id))
    for u in undecoded:
        _say(console, "")
        _say(console, Text(_undecoded_line(u), style="yellow"))


def _kind(entry: HistoryEntry) -> str:
    if isinstance(entry, ModelInputEntry):
        return "input" if entry.text else "observation"
    if isinstance(entry, ModelOutputEntry):
        return "model output"
    if isinstance(entry, ToolResultsEntry):
        return "tool results"
    covered = f" of {entry.covers[0]}..{entry.covers[-1]}" if entry.covers else ""
    return f"recap{covered}" + (f" ({entry.strategy})" if entry.strategy else "")


def _print_entry(console: Console, entry: HistoryEntry, full: bool, seq: int | None) -> None:
    who = str(entry.author)
    if isinstance(entry, ModelOutputEntry) and entry.model:
        who = f"{entry.model} via {who}"
    head = Text.assemble((entry.id, "bold"), f" (seq {seq})" if seq is not None else "", "  ",
                         (_kind(entry), "cyan"), f"  {who}  {_time(entry.created_at)}")
    if entry.revision > 1:
        head.append(f"  revision {entry.revision}")
    if entry.retention is Retention.CRITICAL:
        head.append("  pinned", style="magenta")
    if entry.folded:
        head.append("  folded into a recap", style="blue")
    _say(console, head)
    if isinstance(entry, ModelInputEntry):
        if entry.text:
            _body(console, shorten(entry.text, full))
    elif isinstance(entry, ModelOutputEntry):
        if entry.content.live.text.strip() or not entry.tool_calls:
            _body(console, shorten(entry.content.live.text, full) or "(no text)", style="bold")
        for call in entry.tool_calls:
            _say(console, Text.assemble(f"{_INDENT}→ ", (call.name, "yellow"),
                                        f" {shorten(call.arguments, full)}  ({call.id})"))
    elif isinstance(entry, ToolResultsEntry):
        for result in entry.results:
            status = result.status.value
            text = shorten(result.content.live.text, full)
            line = Text.assemble(f"{_INDENT}← ", (result.name, "yellow"), " ",
                                 (status, _STATUS_STYLE.get(status, "")), f" ({result.call_id})")
            if "\n" not in text:  # (a short result on its call's line, a longer one under it)
                _say(console, line.append(f": {text}"))
                continue
            _say(console, line.append(":"))
            _body(console, _INDENT + text.replace("\n", "\n" + _INDENT))
    elif isinstance(entry, RecapEntry):
        _body(console, shorten(entry.content.live.text, full))
    for note in getattr(entry, "notifications", ()):
        _print_note(console, note, full)


def _print_note(console: Console, note: Notification, full: bool) -> None:
    _say(console, Text.assemble(f"{_INDENT}note ", (note.id, "magenta"), f" from {note.sender}: ",
                                shorten(note.text, full)))


def _undecoded_line(u: dict[str, Any]) -> str:
    latest = json.dumps(u["latest"], ensure_ascii=False)
    return (f"effects {u['type']} of app {u['app']} are not decoded here ({u['decode']}); "
            f"the latest: {one_line(latest, SUMMARY_CHARS)}")


# -- audit ---------------------------------------------------------------------------------


def audit_printer(console: Console) -> Callable[[dict[str, Any]], None]:
    """A printer of ``audit``'s records, one line each: seq (and system seq), time, sender,
    record kind and a one-line summary; a sub-agent's thread names its parent once, first."""
    said_parent = False

    def show(line: dict[str, Any]) -> None:
        nonlocal said_parent
        if "parent" in line and not said_parent:
            _say(console, Text(f"a sub-agent of thread {line['parent']}", style="dim"))
            said_parent = True
        seq = f"{line['seq']:>5}"
        if "system_seq" in line:
            seq += f" (system {line['system_seq']})"
        at = dt.datetime.fromisoformat(line["sent_at"])
        _say(console, Text.assemble((seq, "bold"), f"  {_time(at)}  ", (line["sender"], "dim"), "  ",
                                    (line["kind"], "cyan"), f"  {one_line(line['summary'], SUMMARY_CHARS)}"))
    return show


# -- state ---------------------------------------------------------------------------------


def print_state(console: Console, thread_id: str, data: dict[str, Any]) -> None:
    """``state``: what ``state --json`` prints (``data``), for a person."""
    _say(console, Text.assemble((f"thread {thread_id}", "bold"), ": ", (data["status"], "cyan"),
                                f" (engine {data['state']})"))
    for key in ("result", "question", "error", "reason", "by", "waiting_on"):
        if key in data:
            _say(console, Text(f"  {key.replace('_', ' ')}: {shorten(data[key])}", style="red" if key == "error" else ""))
    for a in data.get("approvals", ()):
        _say(console, Text(f"  waits for approval: {a['name']}({shorten(a['arguments'])}) call {a['id']}: "
                           f"livecontext approve --thread {thread_id} {a['id']} [--arguments JSON], or "
                           f"livecontext deny --thread {thread_id} {a['id']} --reason TEXT"))
    pending = data["pending_tool_results"]
    _say(console, f"  entries: {data['entries']}" + (f", {pending} tool results pending" if pending else "")
                  + f"; last seq {data['seq']}")
    if data.get("budget") is not None:
        _say(console, f"  budget: {data['budget']:,} tokens")
    usage = data["usage"]
    cached = f" ({usage['cached_input_tokens']:,} cached)" if usage["cached_input_tokens"] else ""
    calls = usage["model_calls"]
    subs = data.get("sub_agents", [])
    _say(console, f"  steps: {calls} model call{'' if calls == 1 else 's'}, {usage['input_tokens']:,} input tokens"
                  f"{cached}, {usage['output_tokens']:,} output tokens" + (" (its sub-agents' included)" if subs else ""))
    apps = data["apps"]
    _say(console, "  apps:" + ("" if apps else " none"))
    for name, text in apps.items():
        _say(console, f"    {name}: {_app_state(text)}")
    if subs:
        _say(console, f"  sub-agents: {', '.join(subs)}")
    for u in data.get("undecoded", ()):
        _say(console, Text("  " + _undecoded_line(u), style="yellow"))


def _app_state(text: str | None) -> str:
    if text is None:
        return "(its effects have no text)"
    if not text:
        return "(nothing yet)"
    lines = text.count("\n") + 1
    return one_line(text, APP_CHARS) + (f" ({lines} lines)" if lines > 1 else "")
