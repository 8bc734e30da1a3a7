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
