"""What a tool's plain-text output says, in a line: its errors, its test outcome, its first
meaningful line.

Used where the runtime writes levels of detail the tool did not give (a result's GIST) and by
the recap strategies, which must say what happened in folded steps without a model. The
patterns are those of the outputs agents see most: Python tracebacks and pytest/unittest
logs, compilers and command-line tools (``error:``, ``fatal:``), shells (``command not
found``, ``No such file or directory``).
"""

from __future__ import annotations

import re

_ALNUM = re.compile(r"[A-Za-z0-9]")

_EXCEPTION = re.compile(
    r"^\s*(?:E\s+)?(?:[A-Za-z_][\w.]*\.)?([A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure))\b(?::\s*(.*))?$")
"""A Python exception line (``ValueError: bad``, pytest's ``E   ImportError: ...``)."""
_TOOL_ERROR = re.compile(
    r"^\s*(?:\S+:\d+(?::\d+)?:\s*)?(?:error|fatal|ERROR|FATAL|Error)(?:\[\w+\])?:\s*(.+)$")
"""A compiler's or command-line tool's error (``a.c:3:5: error: ...``, ``fatal: not a git repository``)."""
_SHELL_ERROR = re.compile(r"(?:command not found|No such file or directory|Permission denied)\s*$")

_PYTEST_SUMMARY = re.compile(
    r"^=*\s*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|rerun)"
    r"(?:, )?)+)(?: in [\d.]+s(?: \([^)]*\))?)?\s*=*$")
"""pytest's last line: ``==== 3 failed, 12 passed in 0.52s ====``."""
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s$")
_UNITTEST_VERDICT = re.compile(r"^(OK|FAILED)(?: \(([^)]*)\))?$")


def meaningful(line: str) -> bool:
    """Whether ``line`` says something: not blank, not a row of ``=====`` or box drawing."""
    return bool(_ALNUM.search(line))


def first_meaningful_line(text: str) -> str:
    """The first line of ``text`` that says something, stripped (``""`` if none)."""
    for line in text.splitlines():
        if meaningful(line):
            return line.strip()
    return ""


def error_line(text: str) -> str:
    """The last error ``text`` reports (an exception, a tool's ``error:``), stripped; ``""``
    when it reports none. The last one is the one a traceback ends with."""
    found = ""
    for line in text.splitlines():
        if _EXCEPTION.match(line) or _TOOL_ERROR.match(line) or _SHELL_ERROR.search(line):
            found = line.strip()
    if found.startswith("E "):  # pytest's marker of an assertion's lines
        found = found[1:].strip()
    return found


def test_outcome(text: str) -> str:
    """The outcome of a test run in ``text`` (``3 failed, 12 passed``; ``ran 5 tests: OK``),
    or ``""`` when it holds none. The last one counts (a log may hold several runs)."""
    outcome = ""
    ran = ""
    for raw in text.splitlines():
        line = raw.strip()
        m = _PYTEST_SUMMARY.match(line)
        if m:
            outcome = m.group(1).rstrip(", ")
            continue
        m = _UNITTEST_RAN.match(line)
        if m:
            ran = m.group(1)
            continue
        m = _UNITTEST_VERDICT.match(line)
        if m and ran:
            detail = f" ({m.group(2)})" if m.group(2) else ""
            outcome = f"ran {ran} tests: {m.group(1)}{detail}"
            ran = ""
    return outcome


def salient_line(text: str) -> str:
    """The one line that best says what ``text`` reports: a test run's outcome, else its last
    error, else its first meaningful line."""
    return test_outcome(text) or error_line(text) or first_meaningful_line(text)


# -- what a model's text and an error say (used by the recap strategies) -------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])([\"')\]]*)\s+(?=\S)")
"""Where a sentence ends inside a line: ``.``, ``!`` or ``?`` (and closing quotes), then space."""
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?][\"')\]])\s+(?=\S)|(?<=[.!?])\s+(?=\S)")
"""The same boundary, for splitting (closing quotes stay with their sentence)."""
_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+')
"""A Python traceback's frame line."""
_LOCATED = re.compile(r"^\s*([\w./\\-]+\.\w+):\d+(?::\d+)?:")
"""A location prefix: pytest's ``tests/test_a.py:12: AssertionError``, a compiler's ``a.c:3:5: error:``."""


def first_sentence(text: str, limit: int = 160) -> str:
    """The first sentence of ``text``'s first meaningful line, at most ``limit`` characters
    (cut with ``…``). A line without a sentence end is taken whole."""
    line = first_meaningful_line(text)
    end = _SENTENCE_END.search(line)
    if end:
        line = line[: end.end(1)]
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def questions(text: str, limit: int = 200) -> list[str]:
    """The sentences of ``text`` that ask something (end with ``?``), outside code blocks, in
    order and without repeats, each at most ``limit`` characters (the start is cut: a
    question's end says what it asks)."""
    found: list[str] = []
    in_code = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code or "?" not in line:
            continue
        for sentence in _SENTENCE_SPLIT.split(line):
            sentence = sentence.strip().lstrip("-*#> ").strip()
            if sentence.rstrip("\"')]").endswith("?") and meaningful(sentence) and sentence not in found:
                found.append(sentence if len(sentence) <= limit else "…" + sentence[-(limit - 1):])
    return found


def error_place(text: str) -> str:
    """The file the last error of ``text`` points at, or ``""``: the innermost frame before
    the error line (a traceback's ``File "..."``, pytest's or a compiler's ``path:line:``),
    else the first ``path:line:`` after it (pytest's ``tests/test_a.py:12: AssertionError``)."""
    error = error_line(text)
    if not error:
        return ""
    lines = text.splitlines()
    at = max(i for i, line in enumerate(lines) if line.strip().endswith(error))
    place = ""
    for line in lines[: at + 1]:
        found = _FRAME.match(line) or _LOCATED.match(line)
        if found:
            place = found.group(1)
    if not place:
        for line in lines[at + 1:]:
            found = _LOCATED.match(line)
            if found:
                return found.group(1)
    return place


def cut_at_boundary(text: str, limit: int) -> str:
    """The longest start of ``text`` within ``limit`` characters that ends at a sentence's end;
    failing that, at a line's end; failing that, at a word's end (with ``…``); failing that,
    cut hard. ``text`` itself when it fits."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = text[: limit + 1]  # (a boundary right after the limit's last character still counts)
    sentence = max((m.end() for m in _BOUNDARY.finditer(head) if m.end() <= limit), default=-1)
    if sentence > 0:
        return text[:sentence].rstrip()
    line = head.rfind("\n")
    if line > 0:
        return text[:line].rstrip()
    word = head[:limit].rfind(" ")
    if word > 0 and limit >= 2:
        return text[: min(word, limit - 1)].rstrip() + "…"
    return text[: limit - 1] + "…" if limit >= 1 else ""


_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*(?=\s|$)")
"""A position just after a sentence's end (and its closing quotes), before space or the end."""
