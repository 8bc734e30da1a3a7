"""What a shell command does, read from its text: the program it runs, the files it reads and
writes, what it searches for, and which tests it runs.

Agents drive coding work through a shell tool (``bash``, ``execute_bash``, ``shell``), so the
recap must say ``pytest``, ``grep`` and ``sed -i a.py`` rather than ``bash`` forty times. The
reading is a heuristic over the command's words, never a shell: nothing here runs anything.

- Here-documents are taken out first (their bodies are data, often code that no shell lexer
  survives): ``cat > a.py <<'EOF' ... EOF`` writes ``a.py``; an ``apply_patch`` body names the
  files it adds, updates or deletes; a ``python - <<EOF`` body that opens a file for writing
  writes it.
- The command is split at ``&&``, ``||``, ``;``, ``|``, ``&`` and new lines. Its *program* is
  that of the first part that does something (``cd x &&``, ``export``, ``source`` only set up),
  with environment assignments and wrappers skipped (``sudo``, ``env``, ``timeout 60``,
  ``time``, ``nohup``, ``uv run``, ``poetry run``); ``python -m X`` runs ``X``; ``bash -c
  "..."`` runs what it quotes; ``git``, ``pip``, ``npm``, ``cargo``, ``go`` and the like keep
  their subcommand (``git diff``).
- Paths are words that look like paths (a ``/`` or a file extension; no glob, no URL); a
  search's pattern (``grep``, ``rg``) and an editor's script (``sed``, ``awk``) are not paths.
  Writes are ``>`` / ``>>`` targets, ``tee``, ``sed -i``, ``cp`` / ``mv`` targets, ``rm``,
  ``touch``, ``mkdir``, ``git checkout`` / ``git restore``, ``apply_patch``.
"""

from __future__ import annotations

import posixpath
import re
import shlex

from attrs import frozen

_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.M)
_PY_WRITE = re.compile(
    r"""open\(\s*['"]([^'"]+)['"]\s*,\s*['"][wax]|Path\(\s*['"]([^'"]+)['"]\s*\)\s*\.write_(?:text|bytes)""")
_NOISE = re.compile(r"\s+2>&1(?=\s|$)|\s*\|\s*(?:tail|head)(?:\s+-n)?(?:\s+-?\d+)?\s*$")
"""What a shown command does without: ``2>&1``, a final ``| tail -40`` or ``| head -n 20``."""
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_TEST_SCRIPT = re.compile(r"^(?:test_\w*|\w+_test|tests?)\.py$")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9_]{0,7}$")
_PATHLIKE = re.compile(r"^[\w@%+=:,.~/-]+$")
_OPERATORS = {"&&", "||", ";", "|", "&", ";;", "|&", "\n"}
_REDIRECTS = {">", ">>", ">|", "&>", "&>>", ">&", "<", "<<", "<<<", "<&", "<>"}

SETUP = frozenset({"cd", "pushd", "popd", "export", "source", ".", "set", "unset", "alias", "true", ":",
                   "ulimit", "umask", "shopt", "conda activate"})
"""Programs that only set up for the next part of a command (never its program unless alone)."""
_WRAPPERS = {"sudo": {"-u", "-g", "-C"}, "env": {"-u", "-C"}, "time": set(), "nohup": set(), "exec": set(),
             "command": set(), "builtin": set(), "nice": {"-n"}, "stdbuf": set(), "timeout": {"-s", "-k"},
             "xargs": {"-I", "-n", "-P", "-d", "-L"}}
"""Wrappers skipped to find the program, with their options that take a value."""
_RUNNERS = {("uv", "run"), ("poetry", "run"), ("pipenv", "run"), ("hatch", "run"), ("pdm", "run"), ("npx", ""),
            ("bunx", ""), ("pnpm", "exec"), ("conda", "run")}
_SUBCOMMANDS = frozenset({"git", "pip", "pip3", "npm", "yarn", "pnpm", "cargo", "go", "docker", "kubectl",
                          "conda", "poetry", "uv", "make", "dotnet", "gradle", "mvn", "bundle", "apt", "apt-get",
                          "brew", "hg", "svn", "gh", "django-admin", "manage.py"})
_PYTHONS = re.compile(r"^(?:python|python3|python3\.\d+|python2|pypy3?)$")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_SEARCHERS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "git grep"})
_SCRIPTED = frozenset({"sed", "awk", "gawk", "perl", "jq"})
"""Programs whose first word (unless given by an option) is a script, not a path."""
_WRITERS = frozenset({"rm", "touch", "mkdir", "rmdir", "truncate", "chmod", "git checkout", "git restore",
                      "git rm", "git mv", "unzip", "tar"})
"""Programs whose path arguments are all changed."""
_MOVERS = frozenset({"cp", "mv", "ln", "install", "rsync"})
"""Programs whose last path argument is written (the others are read)."""
TEST_RUNNERS = frozenset({"pytest", "py.test", "unittest", "nose2", "nosetests", "tox", "nox", "go test",
                          "cargo test", "npm test", "yarn test", "pnpm test", "make test", "jest", "vitest",
                          "mocha", "rspec", "phpunit", "ctest", "runtests.py", "manage.py test", "bin/test",
                          "django-admin test", "dotnet test", "mvn test", "gradle test", "hatch test"})
"""Programs (as :func:`parse_command` names them) that run tests."""
_SEARCH_VALUED = frozenset({"-e", "-f", "-A", "-B", "-C", "-m", "--max-count", "--include", "--exclude",
                            "--exclude-dir", "-g", "--glob", "-t", "--type", "--regexp", "--file"})
_TEST_VALUED = frozenset({"-k", "-m", "-p", "-c", "-o", "-W", "-n", "--tb", "--maxfail", "--deselect", "--ignore",
                          "--rootdir", "--junitxml", "--durations", "--settings", "--parallel", "--count", "--reruns",
                          "--verbosity"})
_VALUED: dict[str, frozenset[str]] = {
    **{p: _SEARCH_VALUED for p in _SEARCHERS},
    "sed": frozenset({"-e", "-f", "--expression", "--file", "-l"}),
    "awk": frozenset({"-f", "-v", "-F"}), "gawk": frozenset({"-f", "-v", "-F"}),
    "head": frozenset({"-n", "-c"}), "tail": frozenset({"-n", "-c"}),
    "git log": frozenset({"-n"}), "git diff": frozenset({"-U"}),
}
"""Options that take the next word as their value (so that word is no argument), by program;
test runners share :data:`_TEST_VALUED` (``-v`` is a flag for pytest, but a value-taking
``-v 2`` for Django's runtests.py: a path is never taken for a value either way)."""


@frozen
class Command:
    """What one shell command does."""

    shown: str
    """The command as a line: here-document bodies left out (``<<'EOF' …``), ``cd x &&``
    dropped, lines joined with ``;``, spaces collapsed."""
    program: str
    """What it runs: ``pytest``, ``grep``, ``sed``, ``git diff``, ``python`` (for a script).
    Of a command of several parts, the first that sets nothing up and writes nothing (``cat >
    a.py <<EOF ... EOF; python a.py`` runs ``python``), else the first that sets nothing up."""
    reads: tuple[str, ...] = ()
    """Paths it names without changing them, in order."""
    writes: tuple[str, ...] = ()
    """Paths it creates, changes or removes, in order."""
    searched: tuple[str, ...] = ()
    """Patterns it searches for (``grep -rn make_key src`` -> ``make_key``; ``find -name``)."""
    tests: tuple[str, ...] | None = None
    """``None`` when it runs no tests; else what it tests (``tests/test_a.py``; ``()`` for all)."""
    rerun_keys: tuple[str, ...] = ()
    """One key per part that runs something and writes nothing (set-ups, writes and the ends
    of pipes are left out): a later command sharing a key reruns it (see :func:`reruns`)."""


def parse_command(command: str) -> Command:
    """What ``command`` (a shell command line, maybe several lines) does."""
    text, bodies = _cut_heredocs(command)
    reads: list[str] = []
    writes: list[str] = []
    searched: list[str] = []
    keys: list[str] = []
    doing: list[_Part] = []
    for words, piped in _split(text):
        part = _part(words)
        if part is None or part.program in SETUP:
            continue
        doing.append(part)
        reads += part.reads
        writes += part.writes
        searched += part.searched
        if not piped and not part.writes:
            keys += part.keys
    for opener, body in bodies:
        if opener == "apply_patch" or body.lstrip().startswith("*** Begin Patch"):
            writes += [a or b for a, b in _PATCH_FILE.findall(body)]
        elif _PYTHONS.match(opener):
            writes += [a or b for a, b in _PY_WRITE.findall(body)]
    if not doing:  # only set-ups: the first one is what it runs
        doing = [p for p in (_part(words) for words, _ in _split(text)[:1]) if p is not None]
    main = next((p for p in doing if not p.writes), doing[0] if doing else _Part("", ()))
    return Command(shown=_shown(text), program=main.program, reads=_unique(p for p in reads if p not in writes),
                   writes=_unique(writes), searched=_unique(searched), tests=main.tests,
                   rerun_keys=_unique(keys))


def reruns(later: str, earlier: str) -> bool:
    """Whether a run keyed ``later`` repeats one keyed ``earlier`` (both from
    :attr:`Command.rerun_keys`): the same command; or the same test runner on the same
    targets, on more of them, on directories holding them, or on all (no targets)."""
    if later == earlier:
        return True
    if not (later.startswith("test ") and earlier.startswith("test ")):
        return False
    runner, *targets = later.split(" ")[1:]
    runner_before, *targets_before = earlier.split(" ")[1:]
    if runner != runner_before:
        return False
    if not targets:
        return True
    return bool(targets_before) and all(any(_within(old, new) for new in targets) for old in targets_before)


def _within(path: str, target: str) -> bool:
    """Whether test target ``target`` runs ``path`` (the same, or a directory holding it)."""
    target = target.rstrip("/")
    return path.rstrip("/") == target or path.startswith(target + "/") or target in (".", "")


def looks_like_path(word: str) -> bool:
    """Whether ``word`` reads as a file or directory path: a ``/`` or an extension, no glob,
    no URL, no option, no number (``3.11``)."""
    if not word or len(word) > 200 or word.startswith("-") or "://" in word or word in (".", "..", "/dev/null"):
        return False
    if not _PATHLIKE.match(word) or word.replace(".", "").isdigit():
        return False
    return "/" in word or bool(_EXTENSION.search(word))


# -- inside ------------------------------------------------------------------------------------------


@frozen
class _Part:
    program: str
    words: tuple[str, ...]
    """The arguments after the program."""
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    searched: tuple[str, ...] = ()
    tests: tuple[str, ...] | None = None
    keys: tuple[str, ...] = ()


def _cut_heredocs(command: str) -> tuple[str, list[tuple[str, str]]]:
    """``command`` without its here-document bodies, and ``(program, body)`` for each."""
    lines = command.splitlines()
    kept: list[str] = []
    bodies: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        kept.append(line)
        i += 1
        for m in _HEREDOC.finditer(line):
            end, body = m.group(3), []
            while i < len(lines) and (lines[i].strip() if m.group(1) else lines[i]) != end:
                body.append(lines[i])
                i += 1
            i += 1  # the end marker
            words = line[: m.start()].split()
            opener = next((posixpath.basename(w) for w in words if not _ASSIGNMENT.match(w)), "")
            bodies.append((opener, "\n".join(body)))
    return "\n".join(kept), bodies


def _words(text: str) -> list[str]:
    lexer = shlex.shlex(text.replace("\n", " ; "), posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: read it as plain words
        return re.findall(r"&&|\|\||[;&|]|>>|>|<|[^\s;&|<>]+", text.replace("\n", " ; "))


def _split(text: str) -> list[tuple[list[str], bool]]:
    """The parts of a command, each its words (redirections kept, operators not) and whether
    it reads the part before it through a pipe."""
    parts: list[tuple[list[str], bool]] = [([], False)]
    for word in _words(text):
        if word in _OPERATORS:
            if parts[-1][0]:
                parts.append(([], word in ("|", "|&")))
        else:
            parts[-1][0].append(word)
    return [p for p in parts if p[0]]


def _part(words: list[str]) -> _Part | None:
    """One part of a command: its program, arguments and redirections."""
    args: list[str] = []
    redirected: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word in _REDIRECTS or (word.isdigit() and i + 1 < len(words) and words[i + 1] in _REDIRECTS):
            if word.isdigit():
                i += 1
                word = words[i]
            target = words[i + 1] if i + 1 < len(words) else ""
            if word.startswith((">", "&>")) and not word.endswith("&") and looks_like_path(target):
                redirected.append(target)
            i += 2
            continue
        args.append(word)
        i += 1
    args = _unwrapped(args)
    if not args:
        return None
    program, rest = _program(args)
    if program in _SHELLS and rest and rest[0] in ("-c", "-lc", "-ic", "-xc", "-ec", "-exc") and len(rest) > 1:
        inner = parse_command(rest[1])
        return _Part(inner.program, tuple(rest[2:]), inner.reads, inner.writes + tuple(redirected),
                     inner.searched, inner.tests, inner.rerun_keys)
    return _classify(program, rest, tuple(redirected))


def _unwrapped(args: list[str]) -> list[str]:
    """``args`` without leading assignments and wrappers (``sudo -E env X=1 timeout 60 cmd``)."""
    i = 0
    while i < len(args):
        word = args[i]
        if _ASSIGNMENT.match(word):
            i += 1
        elif word in _WRAPPERS:
            valued = _WRAPPERS[word]
            i += 1
            while i < len(args) and (args[i].startswith("-") or _ASSIGNMENT.match(args[i])):
                i += 2 if args[i] in valued else 1
            if word == "timeout" and i < len(args) and re.match(r"^\d+[smhd]?$", args[i]):
                i += 1
        else:
            break
    return args[i:]


def _program(args: list[str]) -> tuple[str, list[str]]:
    """The program ``args`` run (see the module) and the words after it."""
    name, rest = posixpath.basename(args[0]), args[1:]
    for runner, sub in _RUNNERS:
        if name == runner and (not sub or (rest and rest[0] == sub)) and len(rest) > (1 if sub else 0):
            return _program(rest[1:] if sub else [w for w in rest if not w.startswith("-")] or rest)
    if _PYTHONS.match(name):
        while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
            rest = rest[1:]
        if len(rest) >= 2 and rest[0] == "-m":
            return _program([rest[1], *rest[2:]])
        if rest and rest[0] == "-c":
            return "python -c", rest[1:]
        if rest and posixpath.basename(rest[0]) in ("runtests.py", "manage.py"):
            return _subcommand(posixpath.basename(rest[0]), rest[1:])
        return "python", rest
    if name in _SUBCOMMANDS:
        return _subcommand(name, rest)
    return name, rest


def _subcommand(name: str, rest: list[str]) -> tuple[str, list[str]]:
    words = [w for w in rest if not w.startswith("-")]
    if name == "runtests.py" or not words:
        return name, rest
    if name == "manage.py" and words[0] != "test":
        return name, rest
    at = rest.index(words[0])
    return f"{name} {words[0]}", rest[at + 1:]


def _classify(program: str, rest: list[str], redirected: tuple[str, ...]) -> _Part:
    """Reads, writes, searches and tests of one part, by what its program is."""
    runs_tests = program in TEST_RUNNERS or program.endswith(("runtests.py", " test"))
    positional = _positional(rest, _TEST_VALUED if runs_tests else _VALUED.get(program, frozenset()))
    searched: list[str] = []
    if program == "find":  # the paths come before the first option; the rest is an expression
        positional = rest[: next((i for i, w in enumerate(rest) if w.startswith(("-", "(", "!"))), len(rest))]
        searched = [rest[i + 1] for i, w in enumerate(rest[:-1]) if w in ("-name", "-iname", "-path", "-regex")]
    if program in _SEARCHERS or program in _SCRIPTED:
        given = [rest[i + 1] for i, w in enumerate(rest[:-1]) if w in ("-e", "--regexp", "-f", "--file")]
        if program in _SEARCHERS:
            searched = [p for p in (given or positional[:1]) if p.strip()]
        if not given:
            positional = positional[1:]
    paths = [w.split("::")[0] for w in positional if looks_like_path(w.split("::")[0])]
    writes: list[str] = list(redirected)
    reads: list[str] = []
    in_place = any(w.startswith("--in-place") or (w.startswith("-") and not w.startswith("--")
                                                     and "i" in w[1:].split(".")[0]) for w in rest)
    if program == "tee" or program in _WRITERS or (program in ("sed", "perl") and in_place):
        writes += paths
    elif program in _MOVERS and len(paths) >= 2:
        reads += paths[:-1]
        writes.append(paths[-1])
    else:
        reads += paths
    tests = None
    if runs_tests:
        tests = tuple(sorted({w.split("::")[0] for w in positional if not w.isdigit()}))
    elif program == "python" and positional and _TEST_SCRIPT.match(posixpath.basename(positional[0])):
        tests = (positional[0],)
    key = " ".join(("test", program, *tests) if tests is not None else ("run", program, *rest))
    return _Part(program, tuple(rest), tuple(reads), tuple(writes), tuple(searched), tests, (key,))


def _positional(rest: list[str], valued: frozenset[str]) -> list[str]:
    """The words of ``rest`` that are no option and no option's ``valued`` value."""
    out: list[str] = []
    skip = False
    for word in rest:
        if skip:
            skip = False
            continue
        if word == "--":
            continue
        if word.startswith("-") and len(word) > 1:
            skip = word in valued
            continue
        out.append(word)
    return out


def _shown(text: str) -> str:
    """The command as one line: a here-document's body shown as ``…``, lines joined with
    ``;`` (unless continued), ``cd x &&`` set-ups dropped, spaces collapsed."""
    pieces: list[str] = []
    continued = True
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if _HEREDOC.search(line):
            line += " …"
        if not continued:
            pieces[-1] += ";"
        continued = line.endswith(("\\", "&&", "||", "|", ";"))
        pieces.append(line.removesuffix("\\"))
    line = " ".join(" ".join(pieces).split())
    line = _NOISE.sub("", line)
    while True:
        m = re.match(r"^(?:cd|pushd|export|source|\.)\s+\S+\s*(?:&&|;)\s*", line)
        if not m or not line[m.end():]:
            return line
        line = line[m.end():]


def _unique(items: object) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for item in items:  # type: ignore[attr-defined]
        seen.setdefault(item.removeprefix("./"), None)
    return tuple(seen)
