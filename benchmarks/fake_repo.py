"""A fictional Python repository for generated agent transcripts (see ``transcripts.py``).

Modules with classes and functions of plausible names and bodies, tests that name them, and
the shell outputs an agent sees of them: ``cat -n``, ``grep -rn``, ``ls``, ``git diff``. The
code is never run; it only has to read like a real project's, and every output is computed
from the files as they stand (an edit changes what later views, greps and diffs show).
Everything comes from the ``random.Random`` it is given: the same seed, the same repository.
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Sequence

from attrs import define, field, frozen

PROJECTS = ("tessellate", "brindle", "larkspur", "quillmark", "sextant", "cobblestone", "marmoset",
            "wicket", "halyard", "osprey", "tamarind", "pylon")
MODULES = ("config", "parser", "loader", "cache", "registry", "schema", "formatting", "cli",
           "utils", "plugins", "storage", "validators", "events", "scheduler", "serializers",
           "resolver", "sections", "pipeline", "templating", "transport")
NOUNS = ("entry", "record", "key", "path", "option", "token", "node", "field", "value", "source",
         "target", "item", "header", "section", "rule", "handler", "backend", "payload", "timeout",
         "name", "pattern", "spec", "chunk", "buffer", "span", "offset", "limit", "prefix", "alias",
         "column", "label", "scope", "default", "override", "marker", "setting")
VERBS = ("parse", "load", "resolve", "merge", "normalize", "validate", "render", "build",
         "collect", "iter", "split", "format", "read", "write", "apply", "register", "lookup",
         "flush", "encode", "decode", "compile", "match", "expand", "coerce", "strip", "update")
CLASS_SUFFIXES = ("Registry", "Loader", "Parser", "Cache", "Resolver", "Config", "Store",
                  "Manager", "Builder", "Spec", "Set", "Table")
TAILS = ("from the given source", "for the current section", "and cache the result",
         "according to the active rules", "used by the loader", "without touching the disk",
         "in declaration order", "for the command line", "as the schema expects",
         "and report what was skipped", "relative to the project root", "for later lookups")
ERRORS = ("ConfigError", "ParseError", "ValidationError", "LookupFailed", "StorageError")
TEST_CASES = ("basic", "empty", "none", "nested", "unicode", "roundtrip", "missing_key",
              "duplicate", "strict", "defaults", "invalid", "ordering", "large", "whitespace")
STDLIB = ("import logging", "import os", "import re", "import json", "import itertools",
          "from collections.abc import Iterable, Iterator, Mapping",
          "from dataclasses import dataclass, field", "from pathlib import Path",
          "from typing import Any")


@frozen
class Function:
    """Where a function is defined: its file, name, class (if a method) and parameters."""

    path: str
    name: str
    cls: str | None
    params: tuple[str, ...]

    @property
    def module(self) -> str:
        return self.path.rsplit("/", 1)[-1].removesuffix(".py")

    @property
    def qualname(self) -> str:
        return f"{self.cls}.{self.name}" if self.cls else self.name


@define
class Repo:
    """The repository: files as lists of lines, the functions defined, the tests."""

    name: str
    package: str
    files: dict[str, list[str]]
    functions: list[Function]
    tests: dict[str, list[str]]
    """Test file -> the test function names in it."""
    original: dict[str, list[str]] = field(factory=dict)
    """The files as they were before any edit (for ``git diff``)."""

    def text(self, path: str) -> str:
        return "\n".join(self.files[path]) + "\n"

    def modules(self) -> list[str]:
        return [p for p in self.files if p.startswith("src/") and p.endswith(".py")
                and not p.endswith("__init__.py")]

    def line_of(self, path: str, needle: str, start: int = 1) -> int:
        """The 1-based number of the first line at or after ``start`` containing ``needle``."""
        for i, line in enumerate(self.files[path][start - 1:], start=start):
            if needle in line:
                return i
        raise KeyError(f"{needle!r} not in {path}")

    def span_of(self, fn: Function) -> tuple[int, int]:
        """The first and last line of ``fn``'s definition (decorators and docstring included)."""
        lines = self.files[fn.path]
        start = self.line_of(fn.path, f"def {fn.name}(")
        indent = len(lines[start - 1]) - len(lines[start - 1].lstrip())
        end = start
        for i in range(start, len(lines)):
            line = lines[i]
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            if line.strip():
                end = i + 1
        return start, end

    def cat_n(self, path: str, start: int = 1, end: int | None = None) -> str:
        """``cat -n`` of lines ``start`` to ``end`` (inclusive) of ``path``."""
        lines = self.files[path]
        stop = len(lines) if end is None else min(end, len(lines))
        return "\n".join(f"{i:6d}\t{lines[i - 1]}" for i in range(max(start, 1), stop + 1))

    def grep(self, pattern: str, roots: Sequence[str] = ("src/", "tests/")) -> str:
        """``grep -rn pattern roots`` (a fixed string; matches in file order)."""
        hits = []
        for path in sorted(self.files):
            if not path.startswith(tuple(roots)):
                continue
            for i, line in enumerate(self.files[path], start=1):
                if pattern in line:
                    hits.append(f"{path}:{i}:{line}")
        return "\n".join(hits)

    def ls(self, directory: str = "") -> str:
        """``ls -la`` of ``directory`` (the repository's root when empty)."""
        prefix = f"{directory.rstrip('/')}/" if directory else ""
        names: dict[str, int] = {}
        for path in self.files:
            if path.startswith(prefix):
                head, sep, _ = path[len(prefix):].partition("/")
                key = head + ("/" if sep else "")
                names[key] = names.get(key, 0) + len(self.text(path))
        rows = ["total %d" % (4 * len(names) + 8), "drwxr-xr-x  9 agent agent  4096 Mar  4 10:12 .",
                "drwxr-xr-x  3 agent agent  4096 Mar  4 10:11 .."]
        for name in sorted(names):
            if name.endswith("/"):
                rows.append(f"drwxr-xr-x  4 agent agent  4096 Mar  4 10:12 {name[:-1]}")
            else:
                rows.append(f"-rw-r--r--  1 agent agent {names[name]:5d} Mar  4 10:12 {name}")
        return "\n".join(rows)

    def replace(self, path: str, old: str, new: str) -> int:
        """Replace the one occurrence of ``old`` in ``path``; the line where it started."""
        self.original.setdefault(path, list(self.files[path]))
        text = self.text(path)
        at = text.index(old)
        self.files[path] = (text[:at] + new + text[at + len(old):]).rstrip("\n").split("\n")
        return text[:at].count("\n") + 1

    def write(self, path: str, text: str) -> None:
        """Create or overwrite ``path`` (a heredoc or the editor's ``create``)."""
        self.original.setdefault(path, [])
        self.files[path] = text.rstrip("\n").split("\n")

    def diff(self) -> str:
        """``git diff`` of the edited tracked files (new files are untracked: not shown)."""
        out = []
        for path in sorted(self.original):
            before = self.original[path]
            if not before:
                continue
            after = self.files[path]
            if before == after:
                continue
            out.append(f"diff --git a/{path} b/{path}\nindex 3f1c2aa..8e0d41b 100644")
            out += difflib.unified_diff(before, after, f"a/{path}", f"b/{path}", lineterm="", n=3)
        return "\n".join(out)


IRREGULAR = {"build": "built", "split": "split", "read": "read", "write": "written", "iter": "iterated",
             "lookup": "looked-up", "strip": "stripped"}


def past(verb: str) -> str:
    """The past participle of one of :data:`VERBS`."""
    return IRREGULAR.get(verb) or (verb + "d" if verb.endswith("e") else verb + "ed")


def snake(*words: str) -> str:
    return "_".join(words)


def camel(*words: str) -> str:
    return "".join(w.capitalize() for w in words)


class _Writer:
    """Generates one module's code."""

    def __init__(self, rng: random.Random, package: str, module: str, others: Sequence[str]) -> None:
        self.rng = rng
        self.package = package
        self.module = module
        self.others = others
        self.functions: list[tuple[str | None, str, tuple[str, ...]]] = []
        self.lines: list[str] = []

    def noun(self) -> str:
        return self.rng.choice(NOUNS)

    def body(self, params: Sequence[str], method: bool, depth: int) -> list[str]:
        rng = self.rng
        ind = "    " * depth
        p = rng.choice(params) if params else "value"
        noun, other = self.noun(), self.noun()
        helper = snake(rng.choice(VERBS), other)
        err = rng.choice(ERRORS)
        shapes = [
            [f"if {p} is None:", f"    raise {err}(\"{p} must not be None\")"],
            [f"if not {p}:", f"    return {rng.choice(['None', '[]', '{}', repr(''), '()'])}"],
            [f"{noun}s = []", f"for {noun} in {p}:", f"    if not {noun}:", "        continue",
             f"    {other} = {helper}({noun})", f"    if {other} in seen:",
             f"        logger.debug(\"skipping duplicate {noun} %r\", {other})", "        continue",
             f"    seen.add({other})", f"    {noun}s.append({other})"],
            ["merged = dict(defaults)", f"for key, value in {p}.items():",
             "    if key in merged and isinstance(merged[key], Mapping):",
             f"        merged[key] = {snake('merge', other)}(merged[key], value)", "    else:",
             "        merged[key] = value"],
            ["try:", f"    {noun} = {helper}({p}, strict=strict)",
             f"except ({err}, KeyError) as exc:",
             f"    logger.debug(\"could not {rng.choice(VERBS)} %r: %s\", {p}, exc)",
             f"    {noun} = None"],
            [f"text = str({p}).strip()", f"if text.startswith({noun.upper()}_PREFIX):",
             f"    text = text[len({noun.upper()}_PREFIX):]",
             "parts = [part.strip() for part in text.split(SEPARATOR) if part.strip()]"],
            [f"with open({p}, encoding=\"utf-8\") as fh:",
             "    for lineno, line in enumerate(fh, start=1):",
             "        if not line.strip() or line.lstrip().startswith(\"#\"):", "            continue",
             f"        {noun}s.append((lineno, line.rstrip(\"\\n\")))"],
            [f"{noun}_names = sorted({{{noun}.name for {noun} in {p} if {noun}.enabled}})",
             f"if len({noun}_names) > MAX_{noun.upper()}S:",
             f"    raise {err}(f\"too many {noun}s: {{len({noun}_names)}}\")"],
        ]
        if method:
            shapes.append([f"self._{noun}s[{p}] = {other}", "self._dirty = True",
                           f"logger.info(\"%s: registered {noun} %r\", self.name, {p})"])
            shapes.append(["if self._cache is not None:",
                           f"    cached = self._cache.get({p})", "    if cached is not None:",
                           "        return cached"])
        out: list[str] = []
        for shape in rng.sample(shapes, rng.randint(1, 3)):
            out += [ind + line for line in shape]
        ret = rng.choice([f"return {noun}s", "return merged", f"return {helper}({p})",
                          f"return tuple({noun}s)", "return parts", "return None",
                          f"return {camel(other, 'Result')}({p}, {noun}s)"])
        out.append(ind + ret)
        return out

    def docstring(self, verb: str, noun: str, ind: str) -> list[str]:
        rng = self.rng
        first = f"{ind}\"\"\"{verb.capitalize()} the {noun} {rng.choice(TAILS)}."
        if rng.random() < 0.6:
            return [first + "\"\"\""]
        return [first, "", f"{ind}Args:", f"{ind}    {noun}: The {noun} to {verb}.",
                f"{ind}    strict: Raise instead of skipping what cannot be used.", "", f"{ind}Returns:",
                f"{ind}    The {past(verb)} {noun}s, in order.", f"{ind}\"\"\""]

    def function(self, cls: str | None) -> list[str]:
        rng = self.rng
        verb, noun = rng.choice(VERBS), self.noun()
        name = snake(verb, noun) if rng.random() < 0.7 else snake(verb, noun, rng.choice(NOUNS) + "s")
        if cls is None and rng.random() < 0.25:
            name = "_" + name
        taken = {f[1] for f in self.functions if f[0] == cls}
        if name in taken:
            name += "_" + str(len(taken))
        params = tuple(rng.sample(NOUNS, rng.randint(1, 3)))
        self.functions.append((cls, name, params))
        ind = "    " if cls else ""
        sig = ", ".join((("self",) if cls else ()) + params + ("*", "strict=False"))
        out = [f"{ind}def {name}({sig}):"]
        out += self.docstring(verb, noun, ind + "    ")
        out += self.body(params, cls is not None, 2 if cls else 1)
        return out

    def klass(self) -> list[str]:
        rng = self.rng
        noun = self.noun()
        name = camel(noun, rng.choice(CLASS_SUFFIXES))
        attrs = rng.sample(NOUNS, 2)
        out = [f"class {name}:", f"    \"\"\"A {noun} {rng.choice(CLASS_SUFFIXES).lower()} {rng.choice(TAILS)}.\"\"\"", "",
               f"    def __init__(self, name, {attrs[0]}=None, *, cache=None):", "        self.name = name",
               f"        self.{attrs[0]} = {attrs[0]}", f"        self._{attrs[1]}s = {{}}",
               "        self._cache = cache", "        self._dirty = False", "",
               "    def __repr__(self):", f"        return f\"{name}({{self.name!r}}, {attrs[0]}={{self.{attrs[0]}!r}})\""]
        for _ in range(rng.randint(3, 9)):
            out += [""] + self.function(name)
        return out

    def write(self) -> list[str]:
        rng = self.rng
        imports = sorted({"import logging", *rng.sample(STDLIB[1:], rng.randint(2, 5))})
        local = [f"from .exceptions import {', '.join(sorted(rng.sample(ERRORS, 2)))}"]
        for other in rng.sample(list(self.others), min(2, len(self.others))):
            local.append(f"from .{other} import {snake(rng.choice(VERBS), self.noun())}")
        consts = [f"{n.upper()}_PREFIX = \"{n[:3]}:\"" for n in rng.sample(NOUNS, 2)]
        consts += ["SEPARATOR = \",\"", f"MAX_{self.noun().upper()}S = {rng.choice([16, 64, 128, 256])}",
                   f"DEFAULT_{self.noun().upper()} = {rng.choice(['30', '1.5', repr('auto'), 'None'])}"]
        out = [f"\"\"\"{self.module.capitalize()}: how {self.package} {rng.choice(VERBS)}s its "
               f"{self.noun()}s {rng.choice(TAILS)}.\"\"\"", "", "from __future__ import annotations", ""]
        out += imports + [""] + sorted(local) + ["", "logger = logging.getLogger(__name__)", ""] + consts
        for _ in range(rng.randint(1, 3)):
            out += ["", ""] + self.klass()
        for _ in range(rng.randint(3, 10)):
            out += ["", ""] + self.function(None)
        return out


def _test_file(rng: random.Random, package: str, module: str,
               functions: Sequence[Function]) -> tuple[list[str], list[str]]:
    public = [f for f in functions if f.cls is None and not f.name.startswith("_")] or list(functions)
    imported = sorted({f.cls or f.name for f in public[:6]})
    lines = ["import pytest", "", f"from {package}.{module} import {', '.join(imported)}", "", "",
             "@pytest.fixture", "def sample_values():", "    return [\"alpha\", \"beta\", \"\", None, \"gamma\"]"]
    names = []
    for fn in rng.sample(public, min(len(public), rng.randint(3, 8))):
        for case in rng.sample(TEST_CASES, rng.randint(2, 5)):
            name = f"test_{fn.name.lstrip('_')}_{case}"
            names.append(name)
            arg = rng.choice(["sample_values", "{\"a\": 1}", "[]", "\"\"", "None"])
            lines += ["", "", f"def {name}({'sample_values' if arg == 'sample_values' else ''}):",
                      f"    result = {fn.name if fn.cls is None else fn.cls + '(' + repr(case) + ').' + fn.name}({arg})",
                      f"    assert result {rng.choice(['== []', 'is None', '== {}', '== ()'])}"]
    return lines, names


def make_repo(rng: random.Random) -> Repo:
    """A fresh repository: 8-14 modules of 150-700 lines, their tests, and project files."""
    name = rng.choice(PROJECTS)
    modules = sorted(rng.sample(MODULES, rng.randint(8, 14)))
    files: dict[str, list[str]] = {}
    functions: list[Function] = []
    tests: dict[str, list[str]] = {}
    for module in modules:
        writer = _Writer(rng, name, module, [m for m in modules if m != module])
        path = f"src/{name}/{module}.py"
        files[path] = writer.write()
        mod_functions = [Function(path, fn, cls, params) for cls, fn, params in writer.functions]
        functions += mod_functions
        test_path = f"tests/test_{module}.py"
        files[test_path], tests[test_path] = _test_file(rng, name, module, mod_functions)
    files[f"src/{name}/__init__.py"] = [f"\"\"\"{name}: configuration and data pipelines.\"\"\"", "",
                                        "__version__ = \"2.4.1\""]
    files[f"src/{name}/exceptions.py"] = [line for e in ERRORS for line in (f"class {e}(Exception):", "    pass", "")]
    files["tests/conftest.py"] = ["import pytest", "", "", "@pytest.fixture", "def tmp_config(tmp_path):",
                                  "    path = tmp_path / \"config.toml\"", "    path.write_text(\"[main]\\n\")",
                                  "    return path"]
    files["pyproject.toml"] = ["[project]", f"name = \"{name}\"", "version = \"2.4.1\"",
                               "requires-python = \">=3.9\"", "", "[tool.pytest.ini_options]",
                               "testpaths = [\"tests\"]", "addopts = \"-ra\""]
    files["README.md"] = [f"# {name}", "", f"{name} loads layered configuration and runs data pipelines.",
                          "", "## Install", "", f"    pip install {name}", "", "## Develop", "",
                          "    pip install -e '.[test]' && pytest"]
    files["CHANGELOG.md"] = ["# Changelog", "", "## 2.4.1", "", "- Fix section ordering on reload.",
                             "", "## 2.4.0", "", "- Plugins can register their own validators."]
    return Repo(name, name, files, functions, tests)

