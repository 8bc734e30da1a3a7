"""The ``livecontext`` command: demo, chat, run, and looking into a store."""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import os
import sys
import warnings
from pathlib import Path
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar

import click

if TYPE_CHECKING:
    from ._interrupt import Interrupt

T = TypeVar("T")


def _fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"livecontext: error: {message}", err=True)
    sys.exit(code)


def run_async(fn: Callable[[], Awaitable[T]], interrupt: Interrupt | None = None) -> T:
    """Run ``fn`` under trio, Ctrl-C taken by ``interrupt`` (see :class:`Interrupt`); turn our
    errors, and the file system's, into one line on stderr and a non-zero exit (130 for
    Ctrl-C).

    Errors come out of trio inside exception groups (a nursery wraps even one): each is
    looked for inside them.
    """
    import trio  # (imported here, as the runtime is: `--version` and `--help` need neither)

    from livecontext.runtime import error_leaves

    from ._interrupt import Interrupt

    try:
        return trio.run((interrupt or Interrupt()).guard, fn)
    except BaseException as exc:  # noqa: BLE001  (what is not ours is raised again)
        leaves = error_leaves(exc)
        for kinds, report in _reports():
            for leaf in leaves:
                if isinstance(leaf, kinds):
                    report(leaf)
        raise


def _exit(leaf: BaseException) -> NoReturn:
    assert isinstance(leaf, SystemExit)
    raise leaf


def _interrupted(leaf: BaseException | None) -> NoReturn:
    click.echo("livecontext: interrupted", err=True)
    sys.exit(130)


def _ours(leaf: BaseException) -> NoReturn:
    _fail(str(leaf).splitlines()[0] if str(leaf) else type(leaf).__name__)


def _os_error(leaf: BaseException) -> NoReturn:
    assert isinstance(leaf, OSError)
    if isinstance(leaf, BrokenPipeError):
        reader_gone()
    where = f": {leaf.filename}" if leaf.filename else ""
    _fail(f"{leaf.strerror or leaf}{where}; check that path and its permissions (and the free disk space)")


def reader_gone() -> NoReturn:
    """What reads our output stopped reading (``livecontext audit | head -1``): end quietly,
    as a Unix tool killed by SIGPIPE does (exit 141), with nothing more written to the pipe."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (Python flushes it on exit)
    except OSError:
        pass
    sys.exit(141)


def _sqlite_error(leaf: BaseException) -> NoReturn:
    # one line: SQLite quotes a damaged schema's SQL, newlines and all
    _fail(f"sqlite: {' '.join(str(leaf).split())}; check the store's file, its folder's permissions and the free disk space")


def _reports() -> tuple[tuple[type[BaseException] | tuple[type[BaseException], ...],
                             Callable[[BaseException], NoReturn]], ...]:
    """What each kind of error found in a failed command becomes, in order of precedence."""
    import sqlite3

    from livecontext.protocol.wire import ProtocolError
    from livecontext.runtime import LivecontextError

    from ._interrupt import Interrupted

    return (
        (SystemExit, _exit),  # (a command's own exit, first)
        ((KeyboardInterrupt, Interrupted), _interrupted),
        ((LivecontextError, ProtocolError), _ours),
        (OSError, _os_error),  # the file system said no where nothing of ours could say it better
        (sqlite3.Error, _sqlite_error),
    )


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                      file: TextIO | None = None, line: str | None = None) -> None:
    """Print a warning as the CLI prints an error: one line on stderr, without the source
    line Python shows (what a user needs is what happened to their data)."""
    click.echo(f"livecontext: warning: {' '.join(str(message).split())}", err=True)


def import_from_cwd() -> None:
    """Put the current folder first on ``sys.path`` (once), as ``python -m`` does: the
    import paths a command is given (``--tool``, ``--app``) and those a thread recorded
    (its apps, its effects' modules) are found from where the command is run, by ``run`` and
    by the inspection commands alike."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)


def print_json(data: Any) -> None:
    """Print one JSON object (every value through the one encoder: an enum, an attrs value
    of a shape that forgot to convert it, never makes the command fail)."""
    from ..agent import dump_json_line

    click.echo(dump_json_line(data))


def store_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--store URL`` with the default store."""
    @click.option("--store", "store_url", default=None, metavar="URL",
                  help="Event store: sqlite:PATH, jsonl:DIR, memory: or postgresql://USER@HOST:PORT/DB "
                       "(default: $LIVECONTEXT_STORE or sqlite:.livecontext/livecontext.db).")
    @functools.wraps(fn)
    def wrapper(*args: Any, store_url: str | None, **kwargs: Any) -> Any:
        from livecontext.runtime.persistence import default_store_url

        if store_url is not None and not store_url.strip():  # (an unset variable in a script)
            _fail("--store is empty: give a store URL (sqlite:PATH, jsonl:DIR, memory: or postgresql://USER@HOST:PORT/DB), "
                  "or leave --store out for the default store")
        return fn(*args, store_url=store_url or default_store_url(), **kwargs)
    return wrapper


def folder_note(store_url: str) -> str | None:
    """The note to print once a store at ``store_url`` is open, if opening it will create its
    folder (``None``: the folder exists, or it is the default store's own ``.livecontext/``).

    Call it before the store is opened: opening creates what is missing.
    """
    from livecontext.runtime.persistence import DEFAULT_STORE_PATH

    scheme, _, rest = store_url.partition(":")
    scheme = scheme.strip().lower()
    if scheme not in ("sqlite", "jsonl") or not rest.strip():
        return None
    path = Path(rest[2:] if rest.startswith("//") else rest).expanduser().absolute()
    if path == Path.cwd() / DEFAULT_STORE_PATH:
        return None
    folder = path.parent if scheme == "sqlite" else path
    if folder.exists():
        return None
    while not folder.parent.exists() and folder.parent != folder:
        folder = folder.parent
    return f"created the folder {folder} for the store {store_url}"


@contextlib.contextmanager
def _interrupt_said() -> Iterator[None]:
    """A Ctrl-C before a command took it over (while its modules are imported) ends the command
    as one later does: one line, exit 130 (click would say "Aborted!" and exit 1)."""
    try:
        yield
    except KeyboardInterrupt:
        _interrupted(None)


class _Commands(click.Group):
    """The commands, each module of them imported when one of its commands is asked for (every
    one for ``--help``), so that a command does not pay for the others' imports."""

    modules = {
        "approve": "_commands_approve",
        "audit": "_commands_store",
        "batch": "_commands_batch",
        "chat": "_commands_agent",
        "copy": "_commands_copy",
        "demo": "_commands_agent",
        "deny": "_commands_approve",
        "explore": "_commands_explore",
        "fork": "_commands_store",
        "history": "_commands_store",
        "mcp": "_commands_mcp",
        "render": "_commands_store",
        "run": "_commands_agent",
        "state": "_commands_store",
        "threads": "_commands_store",
        "trace": "_commands_trace",
        "verify": "_commands_store",
    }
    """The module that adds each command to :func:`main` (``tests/actors/cli/test_cli_startup.py``
    checks that this lists every command of those modules)."""

    summaries = {
        "approve": "Approve a tool call that waits for a person, and carry on.",
        "audit": "Print one line per log record of a thread, its sender and time.",
        "batch": "Run one agent per task of a JSONL file, many at once.",
        "chat": "Chat with an agent in the terminal.",
        "copy": "Copy what can be read of a store into a new store.",
        "demo": "Run the offline demo.",
        "deny": "Deny a tool call that waits for a person, saying why.",
        "explore": "Run a system under many seeded schedules; show failing seeds.",
        "fork": "Make a new thread (or system) from the records of another.",
        "history": "Print a thread's entries as a transcript.",
        "mcp": "Serve an agent as MCP tools (send, history, state).",
        "render": "Print what the model is sent (or was sent).",
        "run": "Run an agent until it waits for input and none is left.",
        "state": "Print a thread's state, status, apps and usage.",
        "threads": "List the threads of a store.",
        "trace": "Write a thread's trace page.",
        "verify": "Check every record and snapshot of a store.",
    }
    """The line each command has in ``livecontext --help``: written here, so that the listing
    imports none of the commands' modules (``--help`` starts as fast as ``--version``)."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        with _interrupt_said():  # (`--help` imports every command's module here)
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with _interrupt_said():
            return super().invoke(ctx)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.modules)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, self.summaries[name]) for name in self.list_commands(ctx)])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = self.modules.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            importlib.import_module(f"{__package__}.{module}")  # (its decorators add its commands)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="livecontext")
def main() -> None:
    """livecontext: an actor runtime for LLM agents whose context is live.

    Start with `livecontext demo` (offline).
    """
    # the runtime's one garbage-collector policy, for the whole command (also those that read
    # a thread without opening a runtime: a trace of a long thread makes many objects)
    from livecontext.runtime import gc_tuned

    click.get_current_context().with_resource(gc_tuned())
    warnings.showwarning = _one_line_warning
    # the CLI reports failures itself in one line; the runtime's own log says more only on request
    logging.basicConfig(level=os.environ.get("LIVECONTEXT_LOG", "ERROR").upper(),
                        format="livecontext: %(levelname)s: %(name)s: %(message)s")
