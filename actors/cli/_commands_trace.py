"""``livecontext trace``: a thread's log drawn as a page, an SVG or JSON (see ``actors.trace``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import trio

from livecontext.protocol.wire import dump_json
from livecontext.runtime import UsageError

from ..trace import build_trace, trace_json, trace_svg
from ._main import import_from_cwd, main, run_async, store_option

FORMATS = ("html", "svg", "json")
"""What ``trace`` writes; without ``--format``, the output's extension chooses (else html)."""


class OutputFolderMissingError(UsageError):
    """``-o`` names a file in a folder that does not exist (nothing is created)."""


def output_format(path: Path, given: str | None) -> str:
    """The format to write ``path`` in: ``given``, else its extension's, else ``html``.

    Raises:
        UsageError: ``given`` is not one of :data:`FORMATS`.
    """
    if given is not None:
        chosen = given.strip().lower()
        if chosen not in FORMATS:
            raise UsageError(f"unknown format {given!r}: give --format html, svg or json")
        return chosen
    suffix = path.suffix.lower().lstrip(".")
    return {"htm": "html"}.get(suffix, suffix) if suffix in (*FORMATS, "htm") else "html"


def check_output(path: Path) -> None:
    """Refuse an output path whose folder does not exist, or that is a folder."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OutputFolderMissingError(f"-o {path}: the folder {folder} does not exist; make it first "
                                       f"(mkdir -p {folder}) or write elsewhere")
    if path.is_dir():
        raise OutputFolderMissingError(f"-o {path} is a folder: give a file's path, e.g. {path / 'trace.html'}")


def render_output(data: dict[str, Any], fmt: str) -> str:
    """The text of a trace in ``fmt``."""
    if fmt == "json":
        return dump_json(data) + "\n"
    if fmt == "svg":
        return trace_svg(data)
    from ..trace import render_page

    return render_page(data)


@main.command()
@store_option
@click.option("--thread", "thread_id", default=None, help="The thread to trace (with --system: default its first agent's).")
@click.option("--system", "system", default=None, metavar="NAME",
              help="Trace the thread as an agent of system NAME: its other agents are columns too, and "
                   "--at is a system seq.")
@click.option("--at", type=click.IntRange(min=1), default=None, metavar="SEQ",
              help="Stop at this seq (default: the end).")
@click.option("-o", "--output", "output", required=True, type=click.Path(path_type=Path), metavar="PATH",
              help="Where to write the trace.")
@click.option("--format", "fmt", default=None, metavar="html|svg|json",
              help="What to write (default: from PATH's extension, else html).")
def trace(store_url: str, thread_id: str | None, system: str | None, at: int | None, output: Path,
          fmt: str | None) -> None:
    """Write a thread's trace: who sent what to whom and when, the engine's states, what each
    model call was sent at which level, and the folds, notifications, edits and denials.

    html: one self-contained page (no network needed to view it); svg: the sequence diagram
    alone; json: the data both are made from.
    """
    async def go() -> str:
        chosen = output_format(output, fmt)
        check_output(output)
        if thread_id is None and system is None:
            raise UsageError("trace needs --thread T (or --system S); `livecontext threads` lists the threads")
        data = trace_json(await build_trace(store_url, thread_id, system=system, at=at))
        await trio.Path(output).write_text(render_output(data, chosen), encoding="utf-8")
        counts = data["counts"]
        return (f"wrote {output} ({chosen}): thread {data['thread']}, {counts['records']} records, "
                f"{counts['messages']} messages, {counts['model_calls']} model calls")

    import_from_cwd()  # (the thread's apps are made from here, as ``run`` made them)
    click.echo(run_async(go))
