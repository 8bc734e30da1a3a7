"""What one folded step did, read from its full content: pure functions, no model.

A *step* is an input, or a model output with the tool results after it (see
:func:`~livecontext.actors.recap.steps_of`). Its facts come from the LIVE text and from each
call's name and arguments as the model wrote them, never from the shorter levels (a GIST is
written for a reader, not for counting):

- **what a call did** — for a shell-like call (a ``command`` or ``cmd`` argument) the command
  as read by :func:`~._shell.parse_command` (program, files read and written, searches, test
  targets); for an editor-like call (a ``path`` and a ``command`` such as ``view``,
  ``create``, ``str_replace``, ``insert``) that command on that path; for an ``apply_patch``
  call the files its patch names; for any other tool its name, its path-like and search-like
  arguments, and its arguments at GIST as the text shown.
- **how it ended** — a test run's outcome (:func:`~livecontext.actors.history.test_outcome`),
  an error (:func:`~livecontext.actors.history.error_line` and the file it points at), or
  the output's size. Views and searches (``cat``, ``grep``, an editor's ``view``) show files,
  not outcomes: an error line inside them counts only when the call failed or the program
  itself complains (``cat: a.py: No such file or directory``).
- **what the model said** — its first sentence (an intent or a decision) and its questions.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Sequence

from attrs import frozen

from livecontext.actors.history import (
    error_line,
    error_place,
    first_meaningful_line,
    first_sentence,
    meaningful,
    questions,
    test_outcome,
)
from livecontext.protocol.history import (
    HistoryEntry,
    Level,
    ModelInputEntry,
    ModelOutputEntry,
    Notification,
    RecapEntry,
    ToolCall,
    ToolResult,
    ToolResultsEntry,
    ToolStatus,
)

from ._shell import looks_like_path, parse_command

STEP_CHARS = 240
"""The longest line of one step (``- e12 bash: pytest -x tests/test_a.py → 3 failed, 12 passed``)."""
SAID_CHARS = 160
"""The longest first sentence kept of an input or a model's text."""
ERROR_CHARS = 160
"""The longest error line kept."""
KEY_CHARS = 100
"""The longest rerun key kept (a longer one ends in a digest of the whole)."""

WORKSPACE_ROOTS = frozenset({"testbed", "repo", "workspace", "app", "code", "project", "src", "work", "w"})
"""First directories of absolute paths that hold the project agents work on (left out when shown)."""
EDITOR_COMMANDS = frozenset({"view", "create", "str_replace", "insert", "undo_edit", "write", "edit", "append",
                             "delete", "replace", "overwrite"})
"""An editor-like tool's ``command`` argument values (SWE-agent's and OpenHands' ``str_replace_editor``)."""
_EDITOR_READS = frozenset({"view", "read", "show", "cat"})
VIEWERS = frozenset({"cat", "head", "tail", "less", "more", "nl", "bat", "grep", "egrep", "fgrep", "rg", "ag",
                     "ack", "find", "ls", "tree", "wc", "file", "stat", "sed", "awk", "git diff", "git show",
                     "git log", "git status", "git grep", "git blame", "view", "diff", "du", "pwd", "which",
                     "echo", "printf"})
"""Programs (and editor commands) whose output shows content rather than an outcome."""
_PATH_KEYS = ("path", "file", "file_path", "filepath", "filename", "target_file", "target", "dir", "directory",
              "paths", "files", "relative_path", "notebook_path")
_SEARCH_KEYS = ("pattern", "query", "search_term", "regex", "search", "keyword", "symbol", "name_pattern")
_PATCH_KEYS = ("input", "patch", "diff")
_WRITING_TOOL = re.compile(r"write|edit|create|replace|patch|insert|append|delete|remove|move|rename|save|update|mkdir")
_READING_TOOL = re.compile(r"read|view|open|search|find|list|grep|glob|show|cat|get|lookup")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$|"
                         r"^\+\+\+ (?:b/)?(?!/dev/null)(\S+)", re.M)
_NARRATION = re.compile(
    r"^(?:let me|let's|now\b|check |next,? |first,? |then,? |ok(?:ay)?[,.! ]|great[,.! ]|good[,.! ]|"
    r"i(?:'ll| will) (?:now |first )?(?:run|rerun|check|look|view|read|open|search|find|inspect|examine|see|"
    r"reproduce|test|try|verify|confirm|start)\b|"
    r"(?:re)?running\b|checking\b|looking\b|viewing\b|searching\b)", re.I)
_EXCEPTION_NAME = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?([A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Warning))\b")


@frozen
class ErrorSeen:
    """An error a call reported."""

    text: str
    """The error line, at most :data:`ERROR_CHARS` characters."""
    kind: str
    """What kind of error: the exception's name (``ImportError``), else the line's start."""
    where: str
    """The file it points at (shortened, see :func:`short_path`), or ``""``."""


@frozen
class CallFacts:
    """What one tool call did and how it ended."""

    tool: str
    """The tool's name as the model wrote it."""
    action: str
    """What is counted in a range: the program run (``pytest``), the editor's command
    (``str_replace``), else the tool's name."""
    shown: str
    """What it did, in a few words: the command, ``view src/a.py``, the arguments at GIST."""
    outcome: str
    """How it ended: ``3 failed, 12 passed``, an error, ``212 lines``, ``failed: ...``."""
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    searched: tuple[str, ...] = ()
    error: ErrorSeen | None = None
    test: str = ""
    """The test outcome it reported (``3 failed, 12 passed``), or ``""``."""
    target: str = ""
    """What a test run ran (``tests/test_a.py``; ``""`` for everything or no test run)."""
    keys: tuple[str, ...] = ()
    """What a later call must share to rerun it (see :func:`~._shell.reruns`)."""


@frozen
class StepFacts:
    """What one step did."""

    id: str
    """The id of the step's first entry (the input, or the model output)."""
    kind: str
    """``input``, ``output``, or ``results`` (results whose output is gone)."""
    said: str = ""
    """An input's first line; a model output's first sentence."""
    questions: tuple[str, ...] = ()
    """The questions the model's text asks."""
    notes: tuple[str, ...] = ()
    """The first lines of the notifications the step delivered."""
    calls: tuple[CallFacts, ...] = ()
    decision: bool = False
    """Whether :attr:`said` (a model's) says more than its calls show (:func:`is_decision`)."""


def steps_of(entries: Sequence[HistoryEntry]) -> list[list[HistoryEntry]]:
    """Group unfolded entries into steps: a model output and the tool results after it are one;
    recaps are no step."""
    steps: list[list[HistoryEntry]] = []
    for e in entries:
        if isinstance(e, RecapEntry):
            continue
        if isinstance(e, ToolResultsEntry) and steps and isinstance(steps[-1][-1], ModelOutputEntry):
            steps[-1].append(e)
        else:
            steps.append([e])
    return steps


def is_decision(sentence: str) -> bool:
    """Whether a model's first sentence says more than what its calls show (``The import
    fails: util has no norm.``), rather than narrating them (``Let me look at a.py.``) or
    asking (questions are kept apart)."""
    return bool(sentence) and not sentence.endswith("?") and not _NARRATION.match(sentence)


def facts_of(step: Sequence[HistoryEntry]) -> StepFacts:
    """The facts of one step: an input, or a model output and its tool results."""
    first = step[0]
    notes = tuple(_note(n) for e in step for n in getattr(e, "notifications", ()))
    if isinstance(first, ModelInputEntry):
        said = first_meaningful_line(first.text)
        return StepFacts(first.id, "input", _cut(said, SAID_CHARS), notes=notes)
    results = {r.call_id: r for e in step if isinstance(e, ToolResultsEntry) for r in e.results}
    if isinstance(first, ModelOutputEntry):
        text = first.content.live.text
        calls = tuple(call_facts(c, results.get(c.id), gist) for c, gist in
                      zip(first.tool_calls, first.calls_at(Level.GIST), strict=True))
        sentence = first_sentence(text, len(text) + 1)  # (whole: whether it asks is said at its end)
        return StepFacts(first.id, "output", _cut(sentence, SAID_CHARS), tuple(questions(text)), notes, calls,
                         is_decision(sentence))
    assert not isinstance(first, RecapEntry), "a recap is no step"
    calls = tuple(call_facts(ToolCall(r.call_id, r.name, "{}"), r, None) for r in results.values())
    return StepFacts(first.id, "results", notes=notes, calls=calls)


def call_facts(call: ToolCall, result: ToolResult | None, gist: ToolCall | None = None) -> CallFacts:
    """What ``call`` did (see the module) and how its ``result`` says it ended; ``gist`` is the
    call at GIST (its text shown for a tool the recap knows nothing about)."""
    args = _arguments(call.arguments)
    editor = _editor(args)
    command = None if editor else _command_of(args)
    target = ""
    if command is not None:
        cmd = parse_command(command)
        action = cmd.program or call.name
        reads, writes, searched, keys, shown = cmd.reads, cmd.writes, cmd.searched, cmd.rerun_keys, cmd.shown
        target = " ".join(cmd.tests or ())
    elif editor is not None:
        verb, path = editor
        action, shown = verb, f"{verb} {short_path(path)}"
        reads, writes = ((path,), ()) if verb in _EDITOR_READS else ((), (path,))
        searched, keys = (), (f"edit {verb} {path}",)
    else:
        action = call.name
        paths = _paths(args)
        writes = _patched(args) + (paths if _WRITING_TOOL.search(call.name.lower()) else ())
        reads = () if writes else paths
        searched = tuple(v for v in (args.get(k) for k in _SEARCH_KEYS) if isinstance(v, str) and v.strip())
        keys = (f"call {call.name} {' '.join(call.arguments.split())}",)
        patched = _patched(args)
        shown = "patch " + ", ".join(short_path(p) for p in patched) if patched else \
            _args_shown((gist or call).arguments)
    reads = tuple(short_path(p) for p in reads)
    writes = tuple(short_path(p) for p in writes)
    keys = tuple(_short_key(k) for k in keys)
    viewer = not writes and (action in VIEWERS or (command is None and editor is None
                                                   and bool(_READING_TOOL.search(call.name.lower()))))
    if result is None:
        return CallFacts(call.name, action, shown, "no result", reads, writes, searched, target=target)
    outcome, error, test = _ending(result, action, "view" if viewer else "write" if writes else "run")
    return CallFacts(call.name, action, shown, outcome, reads, writes, searched, error, test, target, keys)


def step_line(facts: StepFacts, limit: int = STEP_CHARS) -> str:
    """The step as one line of at most ``limit`` characters (no ``- `` in front)::

        e7 user: fix the failing cache test (+1 notifications: repeated failures of grep)
        e12 bash: pytest -x tests/test_a.py → 3 failed, 12 passed — "Let me run the tests."
        e20 agent: The fix is in; all tests pass.
    """
    head = f"{facts.id} "
    if facts.kind == "input" or not facts.calls:
        who = "user" if facts.kind == "input" else "agent"
        body = f"{who}: {facts.said}" if facts.said else ""
        if facts.notes:
            notes = f"{len(facts.notes)} notifications: {facts.notes[0]}"
            body = f"{body} (+{notes})" if body else notes
        return _cut(head + (body or who), limit)
    for width in (100, 70, 50, 30, 16, 0):  # narrower until it fits
        parts = [_call_text(c, width) for c in facts.calls]
        said = f' — "{_cut(facts.said, width + 20)}"' if facts.said and width else ""
        line = head + "; ".join(parts) + said
        if len(line) <= limit:
            return line
    return _cut(line, limit)


def short_path(path: str) -> str:
    """``path`` as the recap names it: without ``./``, without a workspace root
    (:data:`WORKSPACE_ROOTS`: ``/testbed/src/a.py`` -> ``src/a.py``) and without what comes
    before ``site-packages/``; at most 80 characters (its end kept)."""
    path = path.strip().removeprefix("./")
    if "site-packages/" in path:
        path = path.split("site-packages/", 1)[1]
    else:
        parts = path.split("/")
        if len(parts) >= 3 and parts[0] == "" and parts[1] in WORKSPACE_ROOTS:
            path = "/".join(parts[2:]) or path
    return path if len(path) <= 80 else "…" + path[-79:]


def error_kind(line: str) -> str:
    """What kind of error ``line`` reports: the exception's name, else its first 40 characters."""
    m = _EXCEPTION_NAME.match(line.strip())
    return m.group(1) if m else _cut(line.strip(), 40)


# -- inside ---------------------------------------------------------------------------------------


def _short_key(key: str) -> str:
    """``key``, or its start and a digest of it when long (keys are kept in the recap's data)."""
    if len(key) <= KEY_CHARS:
        return key
    return key[: KEY_CHARS - 17] + " #" + hashlib.sha256(key.encode()).hexdigest()[:15]


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def _note(n: Notification) -> str:
    return _cut(first_meaningful_line(n.text), 100)


def _arguments(text: str) -> dict[str, object]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _editor(args: dict[str, object]) -> tuple[str, str] | None:
    verb = args.get("command")
    path = next((args[k] for k in ("path", "file_path", "filename", "file") if isinstance(args.get(k), str)), None)
    if isinstance(verb, str) and verb in EDITOR_COMMANDS and isinstance(path, str):
        return verb, path
    return None


def _command_of(args: dict[str, object]) -> str | None:
    """The shell command of a shell-like call's arguments, or ``None``."""
    for key in ("command", "cmd"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            words = [str(v) for v in value]
            if len(words) >= 3 and posixpath.basename(words[0]) in ("bash", "sh", "zsh") and words[1].endswith("c"):
                return words[2]
            return " ".join(_quoted(w) for w in words)
    return None


def _quoted(word: str) -> str:
    return word if word and re.fullmatch(r"[\w@%+=:,./-]+", word) else "'" + word.replace("'", "'\"'\"'") + "'"


def _paths(args: dict[str, object]) -> tuple[str, ...]:
    found: list[str] = []
    for key in _PATH_KEYS:
        value = args.get(key)
        values = value if isinstance(value, list) else [value]
        found += [v for v in values if isinstance(v, str) and (looks_like_path(v) or key != "paths")]
    return tuple(dict.fromkeys(v for v in found if v.strip()))


def _patched(args: dict[str, object]) -> tuple[str, ...]:
    """The files a patch argument (``apply_patch``'s ``input``, a unified diff) names."""
    for key in _PATCH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and ("*** " in value or "+++ " in value):
            return tuple(dict.fromkeys(a or b or c for a, b, c in _PATCH_FILE.findall(value)))
    return ()


def _args_shown(arguments: str) -> str:
    text = " ".join(arguments.split())
    return "" if text in ("{}", "", "null") else text


def _ending(result: ToolResult, action: str, how: str) -> tuple[str, ErrorSeen | None, str]:
    """``(outcome, error, test outcome)`` of a result of a call that ``how`` is ``view``,
    ``write`` or ``run``: a view's outcome is its size, a write's its first line, a run's its
    last line (what a program ends saying)."""
    text = result.content.live.text
    ok = result.status is ToolStatus.OK
    test = "" if how == "view" else test_outcome(text)
    line = error_line(text)
    if how == "view" and ok and not line.startswith(f"{action}:"):
        line = ""  # a view of a file that holds errors is no error
    if not ok and not line:
        line = first_meaningful_line(text) or result.status.value
    error = ErrorSeen(_cut(line, ERROR_CHARS), error_kind(line), short_path(error_place(text))) if line else None
    if not ok:
        outcome = f"{result.status.value}: {line}"
    elif test:
        outcome = f"{test}: {line}" if line else test
    elif line:
        outcome = line
    else:
        lines = [ln.strip() for ln in text.splitlines() if meaningful(ln)]
        if not lines:
            outcome = "no output"
        elif how == "write":
            outcome = first_sentence(lines[0])
        elif len(lines) == 1:
            outcome = lines[0]
        else:
            outcome = f"{len(lines)} lines" + (f": {lines[-1]}" if how == "run" else "")
    return _cut(outcome, ERROR_CHARS), error, test


def _call_text(call: CallFacts, width: int) -> str:
    shown = f" {_cut(call.shown, width)}" if call.shown and width else ""
    return f"{call.tool}:{shown} → {_cut(call.outcome, max(width, 24))}" if shown else \
        f"{call.tool} → {_cut(call.outcome, max(width, 24))}"
