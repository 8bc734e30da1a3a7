"""Realistic coding-agent steps for the recap tests: shell commands with file views, greps,
pytest logs and tracebacks, editor calls, heredocs and patches, built the way the history
store builds them (levels made by the runtime from plain text).

:func:`coding_session` is a whole bug-fixing run of ~100 steps; the ``*_output`` helpers are
single tool outputs as agents see them.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Iterator

from livecontext.actors.history._lod import input_content, output_levels, result_content
from livecontext.protocol.history import (
    HistoryEntry,
    ModelInputEntry,
    ModelOutputEntry,
    Notification,
    Retention,
    ToolCall,
    ToolResult,
    ToolResultsEntry,
    ToolStatus,
)
from livecontext.protocol.kernel import ActorId

from tests.support.context_world import COUNTER

WHO = ActorId("engine", "t")
WHEN = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)

PYTEST_HEADER = """============================= test session starts ==============================
platform linux -- Python 3.11.4, pytest-7.4.0, pluggy-1.2.0
rootdir: /testbed
configfile: pyproject.toml
collected {n} items
"""


def pytest_failing(path: str = "tests/test_cache.py", failed: int = 3, passed: int = 12,
                   error: str = "AssertionError: assert 'k:1:b=2' == 'k:1:b=2.0'") -> str:
    """A pytest log with ``failed`` failures, each an assertion with its traceback."""
    out = [PYTEST_HEADER.format(n=failed + passed), f"{path} " + "." * passed + "F" * failed + "  [100%]", "",
           "=" * 35 + " FAILURES " + "=" * 35]
    for k in range(failed):
        out += [f"{'_' * 20} test_key_{k} {'_' * 20}", "", f"    def test_key_{k}():",
                f">       assert make_key({k}, b=2) == make_key({k}, b=2.0)", f"E       {error}", "",
                f"{path}:{40 + k * 7}: {error.split(':')[0]}"]
    out += ["=" * 27 + " short test summary info " + "=" * 28]
    out += [f"FAILED {path}::test_key_{k} - {error[:60]}" for k in range(failed)]
    out += [f"{'=' * 25} {failed} failed, {passed} passed in 0.52s {'=' * 25}"]
    return "\n".join(out)


def pytest_passing(path: str = "tests", passed: int = 15) -> str:
    """A pytest log where every test passes."""
    return "\n".join([PYTEST_HEADER.format(n=passed), f"{path} " + "." * passed + "  [100%]", "",
                      f"{'=' * 30} {passed} passed in 0.41s {'=' * 30}"])


def collection_error(test_path: str = "tests/test_util.py", module: str = "utils") -> str:
    """pytest failing to import a test module."""
    return "\n".join([PYTEST_HEADER.format(n=0), "", "=" * 30 + " ERRORS " + "=" * 30,
                      f"_______ ERROR collecting {test_path} _______",
                      f"ImportError while importing test module '/testbed/{test_path}'.",
                      "Hint: make sure your test modules/packages have valid Python names.",
                      "Traceback:", "/usr/lib/python3.11/importlib/__init__.py:126: in import_module",
                      "    return _bootstrap._gcd_import(name[level:], package, level)",
                      f"{test_path}:3: in <module>", f"    from {module} import norm",
                      f"E   ModuleNotFoundError: No module named '{module}'",
                      "=" * 20 + " short test summary info " + "=" * 20, f"ERROR {test_path}",
                      "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!",
                      "=" * 25 + " 1 error in 0.09s " + "=" * 25])


def traceback_output(script: str = "reproduce.py", module: str = "src/cache.py",
                     error: str = "ImportError: cannot import name 'norm' from 'util' (/testbed/src/util.py)") -> str:
    """A Python script dying of an exception."""
    return "\n".join(["Traceback (most recent call last):",
                      f'  File "/testbed/{script}", line 3, in <module>', "    from cache import make_key",
                      f'  File "/testbed/{module}", line 5, in <module>', "    from util import norm", error])


def grep_hits(pattern: str, files: list[str], rng: random.Random) -> str:
    """``grep -rn`` output: a few hits per file."""
    return "\n".join(f"{f}:{rng.randint(3, 400)}:    {pattern}(args, **kwargs)  # hit {k}"
                     for f in files for k in range(rng.randint(1, 4)))


def cat_n(path: str, lines: int, rng: random.Random) -> str:
    """``cat -n`` of a Python file (an editor's view looks the same)."""
    body = []
    for n in range(1, lines + 1):
        kind = rng.random()
        if kind < 0.08:
            code = f"def helper_{n}(value, *, strict=False):"
        elif kind < 0.12:
            code = f"class Thing{n}(Base):"
        elif kind < 0.2:
            code = ""
        else:
            code = f"    result_{n} = compute(value, key={n!r}, cache=self._cache)  # {path}"
        body.append(f"{n:6}\t{code}")
    return "\n".join(body)


def edited_snippet(path: str, rng: random.Random) -> str:
    """What an editor answers after a ``str_replace``."""
    return (f"The file /testbed/{path} has been edited. Here's the result of running `cat -n` on a snippet "
            f"of /testbed/{path}:\n" + cat_n(path, 12, rng) + "\nReview the changes and make sure they are as "
            "expected. Edit the file again if necessary.")


class Session:
    """Builds entries one step at a time, with ids ``e1``, ``e2``, ..."""

    def __init__(self) -> None:
        self.n = 0
        self.entries: list[HistoryEntry] = []

    def _id(self) -> str:
        self.n += 1
        return f"e{self.n}"

    def _common(self, retention: Retention) -> dict[str, object]:
        return {"revision": 1, "author": WHO, "created_at": WHEN, "retention": retention}

    def user(self, text: str, *, retention: Retention = Retention.COMPRESSIBLE,
             notes: tuple[str, ...] = ()) -> ModelInputEntry:
        notifications = tuple(Notification(f"n{self.n}_{k}", ActorId("analyzer", "t"), note, WHEN)
                              for k, note in enumerate(notes))
        entry = ModelInputEntry(id=self._id(), content=input_content(text, notifications, COUNTER), text=text,
                                notifications=notifications, **self._common(retention))  # type: ignore[arg-type]
        self.entries.append(entry)
        return entry

    def say(self, text: str, *, retention: Retention = Retention.COMPRESSIBLE) -> ModelOutputEntry:
        return self.act(text, retention=retention)

    def act(self, text: str, *calls: tuple[str, dict[str, object], str, bool],
            retention: Retention = Retention.COMPRESSIBLE) -> ModelOutputEntry:
        """A model output calling ``calls`` — each ``(tool, arguments, output, ok)`` — and its results."""
        tool_calls = tuple(ToolCall(f"call_{self.n}_{k}", name, json.dumps(args)) for k, (name, args, _, _) in
                           enumerate(calls))
        content, recent, gist = output_levels(text, tool_calls, COUNTER)
        output = ModelOutputEntry(id=self._id(), content=content, tool_calls=tool_calls, recent_arguments=recent,
                                  gist_arguments=gist, **self._common(retention))  # type: ignore[arg-type]
        self.entries.append(output)
        if calls:
            results = tuple(
                ToolResult(c.id, c.name, ToolStatus.OK if ok else ToolStatus.FAILED,
                           result_content(c.name, ToolStatus.OK if ok else ToolStatus.FAILED, out, None, None, COUNTER))
                for c, (_, _, out, ok) in zip(tool_calls, calls, strict=True))
            self.entries.append(ToolResultsEntry(id=self._id(), content=COUNTER.content("", "", ""), results=results,
                                                 **self._common(retention)))  # type: ignore[arg-type]
        return output

    def bash(self, text: str, command: str, output: str, ok: bool = True) -> ModelOutputEntry:
        return self.act(text, ("bash", {"command": command}, output, ok))

    def editor(self, text: str, command: str, path: str, output: str, **more: object) -> ModelOutputEntry:
        return self.act(text, ("str_replace_editor", {"command": command, "path": f"/testbed/{path}", **more},
                               output, True))


FILES = ["src/cache.py", "src/util.py", "src/store.py", "src/keys.py", "src/config.py", "src/backend.py",
         "tests/test_cache.py", "tests/test_util.py", "tests/test_store.py", "tests/test_keys.py"]


def coding_session(steps: int = 100, seed: int = 7, *, pin_task: bool = True) -> list[HistoryEntry]:
    """A bug-fixing run of about ``steps`` steps: explore, reproduce, fix, test, repeat.

    The task is the first input (CRITICAL when ``pin_task``); errors appear and are fixed by
    later reruns; one error stays open; the user adds a request halfway; analyzers post notes.
    """
    rng = random.Random(seed)
    s = Session()
    s.user("Fix the cache key bug: <pr_description>make_key(1, b=2) and make_key(1, b=2.0) must give the same "
           "key, and keys must not depend on the order of keyword arguments. The tests in tests/test_cache.py "
           "show the failures.</pr_description> Do not change the tests.",
           retention=Retention.CRITICAL if pin_task else Retention.COMPRESSIBLE)
    for _ in _phases(s, rng):
        if len(_steps(s.entries)) >= steps:
            break
    return s.entries


def _steps(entries: list[HistoryEntry]) -> list[str]:
    return [e.id for e in entries if not isinstance(e, ToolResultsEntry)]


def _phases(s: Session, rng: random.Random) -> Iterator[None]:
    s.bash("Let me look at the repository layout first.", "cd /testbed && ls -la src tests",
           "\n".join(f"-rw-r--r-- 1 root root {rng.randint(300, 9000):5} Jan  1 00:00 {f}" for f in FILES))
    yield
    s.bash("I'll find where make_key is defined.", 'grep -rn "def make_key" /testbed/src',
           "/testbed/src/cache.py:12:def make_key(*args, **kwargs):")
    yield
    s.editor("Let me view the cache module.", "view", "src/cache.py", cat_n("src/cache.py", 180, rng))
    yield
    s.bash("I'll write a script that reproduces the bug.",
           "cat > /testbed/reproduce.py <<'EOF'\nfrom cache import make_key\nprint(make_key(1, b=2) == "
           "make_key(1, b=2.0))\nprint(make_key(a=1, b=2) == make_key(b=2, a=1))\nEOF\ncd /testbed && "
           "python reproduce.py", traceback_output())
    yield
    s.bash("The import fails: util has no norm. Let me check what util exports.", "grep -n \"^def \" src/util.py",
           "\n".join(f"{n}:def {name}(value):" for n, name in [(3, "normalise"), (20, "as_text"), (41, "stable")]))
    yield
    s.editor("The function is called normalise, not norm. I'll fix the import.", "str_replace", "src/cache.py",
             edited_snippet("src/cache.py", rng), old_str="from util import norm",
             new_str="from util import normalise as norm")
    yield
    s.bash("Now the reproduction script again.", "cd /testbed && python reproduce.py", "False\nFalse")
    yield
    s.user("Also make sure keys are stable across processes (no hash()).",
           notes=("usage: the history is at 61% of its token limit",))
    yield
    round_ = 0
    while True:
        round_ += 1
        target = rng.choice(FILES[:6])
        test = rng.choice(FILES[6:])
        s.bash(f"Let me search for the callers of {target.split('/')[1][:-3]}.",
               f"grep -rn \"{target.split('/')[1][:-3]}\" src tests | head -40",
               grep_hits(target.split('/')[1][:-3], rng.sample(FILES, 3), rng))
        yield
        s.editor(f"I'll read {target} around the key logic.", "view", target, cat_n(target, rng.randint(60, 240), rng),
                 view_range=[1, 240])
        yield
        if round_ % 3 == 1:
            s.bash(f"Running the tests of {test}.", f"cd /testbed && python -m pytest {test} -x -q 2>&1 | tail -40",
                   pytest_failing(test, failed=rng.randint(1, 4), passed=rng.randint(5, 20)))
            yield
            s.act("Is the float case meant to compare equal to the int case? The PR says so; I'll normalise "
                  "numbers before hashing.",
                  ("str_replace_editor", {"command": "str_replace", "path": f"/testbed/{target}",
                                          "old_str": "key = repr(value)", "new_str": "key = repr(norm(value))"},
                   edited_snippet(target, rng), True))
            yield
            s.bash("Rerunning the same tests.", f"cd /testbed && python -m pytest {test} -x -q 2>&1 | tail -40",
                   pytest_passing(test, passed=rng.randint(5, 20)))
            yield
        elif round_ % 3 == 2:
            s.bash("I'll patch the ordering with sed.",
                   f"sed -i 's/sorted(kwargs)/sorted(kwargs.items())/' /testbed/{target}", "")
            yield
            s.bash("Check the whole suite.", "cd /testbed && python -m pytest tests 2>&1 | tail -30",
                   collection_error() if round_ == 2 else pytest_passing("tests", passed=40 + round_))
            yield
            if round_ == 2:
                s.bash("tests/test_util.py imports a module that does not exist; it must be src/util.py.",
                       "cd /testbed && PYTHONPATH=src python -m pytest tests/test_util.py -q",
                       pytest_passing("tests/test_util.py", passed=6))
                yield
        else:
            s.act("I'll apply a patch that makes the key independent of kwargs order.",
                  ("apply_patch", {"input": f"*** Begin Patch\n*** Update File: {target}\n@@ def make_key\n-    "
                                            "parts = [repr(a) for a in args]\n+    parts = [stable(a) for a in args]"
                                            "\n*** End Patch"}, "Done!", True))
            yield
            s.bash("Let me view the diff so far.", "cd /testbed && git diff",
                   "\n".join(f"diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1,3 +1,3 @@\n-old\n+new"
                             for f in rng.sample(FILES[:6], 2)))
            yield
            if round_ == 6:
                s.bash("A quick check of the backend under Python 3.8 semantics.",
                       "cd /testbed && python -c 'import backend; backend.check()'",
                       traceback_output("-c", "src/backend.py", "TypeError: unhashable type: 'dict'"))
                yield
                s.say("The backend check fails on dict values; should dicts be supported as key parts at all? "
                      "I'll leave it open and continue with the key fixes.")
                yield
