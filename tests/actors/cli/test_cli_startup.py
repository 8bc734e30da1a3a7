"""The command starts without importing what it will not use: ``--version`` imports only the
command line, ``threads`` only the store and the history, and none of them the model clients,
Ray, OpenTelemetry, PostgreSQL, pydantic or rich. (How long that takes is measured by
benchmarks/bench_startup.py, not here.)

Each command runs in a fresh interpreter, which then says which modules it had imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from livecontext.actors.cli import _main

from tests.support.command import cli_env

HEAVY = ("openai", "ray", "opentelemetry", "psycopg", "psycopg_pool", "pydantic", "rich", "httpx")
"""Libraries a command imports only where it uses them (a model client, batch --ray, tracing,
a postgresql: store, a blueprint or a tool's schema, something drawn)."""

_RUN_AND_LIST_MODULES = """
import json, sys
sys.argv = ["livecontext", *sys.argv[1:]]
from livecontext._command import main
try:
    main()
except SystemExit as done:
    assert not done.code, done.code
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _modules_after(*args: str) -> set[str]:
    """The modules imported by ``livecontext ARGS``, run to its end in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", _RUN_AND_LIST_MODULES, *args], capture_output=True, text=True,
                          env=cli_env(), timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stderr.splitlines()[-1]))


def _heavy(modules: set[str]) -> list[str]:
    return sorted({name.split(".")[0] for name in modules} & set(HEAVY))


def test_the_entry_point_imports_nothing_the_interpreter_had_not_loaded() -> None:
    # (so a Ctrl-C cannot fall before main() is there to meet it, but in the interpreter's own start)
    done = subprocess.run([sys.executable, "-c", "import json, sys; before = set(sys.modules); "
                           "import livecontext._command; print(json.dumps(sorted(set(sys.modules) - before)))"],
                          capture_output=True, text=True, env=cli_env(), timeout=120, check=True)
    assert json.loads(done.stdout) == ["livecontext", "livecontext._command"]


def test_version_imports_the_command_line_only() -> None:
    modules = _modules_after("--version")
    assert _heavy(modules) == []
    assert {"trio", "livecontext.protocol", "livecontext.runtime", "livecontext.actors.cli._commands_store"}.isdisjoint(
        modules)


def test_help_lists_the_commands_without_importing_any_of_them() -> None:
    modules = _modules_after("--help")
    assert _heavy(modules) == []
    assert {f"livecontext.actors.cli.{m}" for m in _main._Commands.modules.values()}.isdisjoint(modules)
    assert "trio" not in modules


def test_threads_of_a_memory_store_imports_no_model_client_tracing_or_drawing() -> None:
    modules = _modules_after("threads", "--store", "memory:")
    assert _heavy(modules) == []
    assert "livecontext.actors.cli._commands_agent" not in modules
    assert "livecontext.runtime.models" not in modules


def test_threads_of_a_sqlite_store_with_threads_imports_no_model_client_tracing_or_drawing(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'x.db'}"
    for thread in ("a", "b"):  # (made in this process: only the listing runs in a fresh one)
        made = CliRunner().invoke(_main.main, ["run", "--store", url, "--model", "echo", "--thread", thread,
                                               "--input", "hi"], env={"LIVECONTEXT_STORE": None})
        assert made.exit_code == 0, made.output
    modules = _modules_after("threads", "--store", url)
    assert _heavy(modules) == []
    assert "livecontext.runtime.models" not in modules


def test_each_command_is_looked_up_in_the_module_that_defines_it() -> None:
    for module in sorted(set(_main._Commands.modules.values())):
        __import__(f"livecontext.actors.cli.{module}")
    defined = {name: command.callback.__module__.rpartition(".")[2]
               for name, command in _main.main.commands.items() if command.callback is not None}
    assert defined == _main._Commands.modules
    assert _main._Commands.summaries.keys() == defined.keys()  # (each command has its line in --help)


@pytest.mark.parametrize("args", [["--help"], ["threads", "--help"]])
def test_help_lists_the_commands_and_their_options(args: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", "from livecontext._command import main; main()", *args],
                          capture_output=True, text=True, env=cli_env(), timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    if args == ["--help"]:
        listed = [line.split()[0] for line in done.stdout.split("Commands:\n")[1].splitlines() if line.strip()]
        assert listed == sorted(_main._Commands.modules)
    else:
        assert "--store URL" in done.stdout
