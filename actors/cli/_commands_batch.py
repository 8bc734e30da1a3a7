"""``livecontext batch``: one agent (or system of agents) per task of a tasks file (see
:mod:`livecontext.actors.batch`)."""

from __future__ import annotations

import importlib.util
import shlex
import sys
from collections import Counter
from typing import NoReturn

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from livecontext.runtime import UsageError
from livecontext.runtime.persistence import default_store_url, open_store

from ..batch import (
    TaskResult,
    batch_name,
    check_tasks,
    unset_placeholders,
    ray_environment,
    read_tasks,
    run_batch,
)
from ..batch import ResultsFile
from ..blueprint import load_any_blueprint
from ._interrupt import Interrupt
from ._main import _fail, folder_note, main, run_async


@main.command()
@click.argument("blueprint_path", metavar="BLUEPRINT.toml")
@click.option("--tasks", "tasks_path", required=True, metavar="TASKS.jsonl",
              help='One task per line: {"id": ..., "inputs": [...], "vars": {...}} (a system\'s inputs may be '
                   '{"AGENT": [...]}).')
@click.option("--workers", default=1, show_default=True, type=click.IntRange(min=1),
              help="Worker processes (more than 1 run on Ray: a local cluster started for the batch, or "
                   "the one --ray names).")
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS", help="Run the workers on this Ray cluster.")
@click.option("--concurrency", default=16, show_default=True, type=click.IntRange(min=1),
              help="Tasks run at once by each worker.")
@click.option("--batch", "batch", default=None, metavar="NAME",
              help="Batch name: threads are NAME/TASK_ID, a system's NAME/TASK_ID.AGENT (default: the tasks "
                   "file's name, without extension).")
@click.option("--store", "store_url", default=None, metavar="URL",
              help="Event store all tasks write to (default: the blueprint's, else $LIVECONTEXT_STORE "
                   "or sqlite:.livecontext/livecontext.db).")
@click.option("--out", "out_path", default=None, metavar="RESULTS.jsonl",
              help="Results file, one JSON line per task, appended as tasks end; a re-run keeps the latest line "
                   "of each task (default: BATCH.results.jsonl).")
@click.option("--base-url", default=None, help="OpenAI-compatible base URL (default: $OPENAI_BASE_URL).")
@click.option("--api-key", default=None, help="API key (default: $OPENAI_API_KEY).")
@click.pass_context
def batch(ctx: click.Context, blueprint_path: str, tasks_path: str, workers: int, ray_address: str | None, concurrency: int,
          batch: str | None, store_url: str | None, out_path: str | None, base_url: str | None,
          api_key: str | None) -> None:
    """Run one agent made from BLUEPRINT.toml per task of TASKS.jsonl, many at once.

    Each task's thread is BATCH/TASK_ID. `{NAME}` in the blueprint's system prompt, pins
    and the task's inputs is replaced by the task's var NAME. A system blueprint ([[agents]])
    runs one system per task, named BATCH/TASK_ID (its agents' threads BATCH/TASK_ID.AGENT),
    the task's inputs given to its first agent (or by agent: {"AGENT": [...]}). Re-running the
    same command skips the tasks the store says are finished and resumes the others from their
    logs.
    """
    on_ray = workers > 1 or ray_address is not None
    name = batch or batch_name(tasks_path)
    try:
        loaded = load_any_blueprint(blueprint_path)
        tasks = read_tasks(tasks_path)
        check_tasks(loaded, tasks, name)
    except UsageError as exc:
        _fail(str(exc))
    for line in unset_placeholders(loaded, tasks):
        click.echo(f"livecontext: note: {line}", err=True)
    url = store_url or loaded.store or default_store_url()
    try:
        sink = ResultsFile.open(out_path or f"{name}.results.jsonl")  # (said in one line before any task runs)
    except UsageError as exc:
        _fail(str(exc))
    out = sink.path
    made_folder = folder_note(url)
    if made_folder:
        click.echo(f"livecontext: note: {made_folder}", err=True)
    resume = _resume_command(ctx)
    interrupt = Interrupt()
    interrupt.hard_message = interrupt.again_message = (
        f"interrupted; batch {name} was stopped at once (each task's log is whole); `{resume}` resumes it")
    with sink, _Reporter(name, len(tasks), sink) as report:
        if on_ray:
            if importlib.util.find_spec("ray") is None:
                _fail("--workers and --ray need Ray: pip install 'livecontext[ray]'")
            ray_environment(ray_address)  # (before Ray is imported: it reads these then)
            from ..batch import run_on_ray
            async def reachable() -> None:  # (said here in one line, before the cluster starts)
                async with await open_store(url):
                    pass
            run_async(reachable)
            try:
                results = run_on_ray(blueprint_path, tasks, url, batch=name, workers=workers,
                                     concurrency=concurrency, address=ray_address, on_result=report.done,
                                     on_start=report.start, base_url=base_url, api_key=api_key)
            except UsageError as exc:
                _fail(str(exc))
            except KeyboardInterrupt:
                report.interrupted(resume)
        else:
            async def go() -> list[TaskResult]:
                def on_event(kind: str, result: TaskResult | None) -> None:
                    if result is None:
                        report.start(1)
                    else:
                        report.done(result)
                with interrupt.region():  # (Ctrl-C cancels the tasks: each one's log is whole)
                    return await run_batch(loaded, tasks, url, batch=name, concurrency=concurrency,
                                           on_event=on_event, base_url=base_url, api_key=api_key)
                return []
            results = run_async(go, interrupt)
            if interrupt.caught:
                report.interrupted(resume)
    by_status = Counter(r.status for r in results)
    skipped = sum(1 for r in results if r.skipped)
    said = ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
    click.echo(f"batch {name}: {len(results)} tasks: {said}" + (f" ({skipped} finished before)" if skipped else "")
               + f"; results in {out}; store {url}")
    if by_status["failed"]:
        sys.exit(1)


def _resume_command(ctx: click.Context) -> str:
    """The command that runs this batch again (its finished tasks skipped, the others resumed):
    this one, with the options given on its command line (not --api-key: it is a secret)."""
    words = ["livecontext", "batch", ctx.params["blueprint_path"]]
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name in (None, "api_key"):
            continue
        if ctx.get_parameter_source(param.name) is click.core.ParameterSource.COMMANDLINE:
            words += [param.opts[0], str(ctx.params[param.name])]
    return shlex.join(words)


class _Reporter:
    """Writes each result line and shows progress: a bar on a terminal, else a line per task."""

    def __init__(self, name: str, total: int, out: ResultsFile) -> None:
        self._name, self._total, self._out = name, total, out
        self._counts: Counter[str] = Counter()
        self._console = console = Console(stderr=True)
        self._bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("{task.fields[counts]}"), TimeElapsedColumn(),
                             console=console) if console.is_terminal else None
        self._shown = self._bar.add_task(name, total=total, counts="") if self._bar is not None else None

    def __enter__(self) -> _Reporter:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def interrupted(self, resume: str) -> NoReturn:
        """Ctrl-C stopped the batch: end the bar's line, say in one line how far it got and
        what resumes it; exit 130 (the results file is kept one line per task on the way out)."""
        live = self._bar is not None
        self._stop()
        if live:  # (the terminal echoed ^C after the bar: the line starts on a line of its own)
            self._console.file.write("\n")
        counts = self._counts
        click.echo(f"livecontext: interrupted; batch {self._name}: {counts['ended']} of {self._total} tasks "
                   f"ended ({counts['done']} done, {counts['failed']} failed), their lines in {self._out.path}; "
                   f"`{resume}` resumes the others", err=True)
        sys.exit(130)

    def start(self, n: int) -> None:
        """``n`` tasks started."""
        self._counts["running"] += n
        self._show()

    def done(self, result: TaskResult) -> None:
        """A task ended."""
        self._out.write(result)
        counts = self._counts
        counts["running"] -= 1
        counts["ended"] += 1
        counts["failed" if result.status == "failed" else "done"] += 1
        if self._bar is None:  # (plain lines when stderr is no terminal: logs, CI)
            said = f"skipped ({result.status} before)" if result.skipped else result.status
            error = f": {result.error}" if result.error else ""
            click.echo(f"{self._name}: task {result.id} {said}{error} [{counts['ended']}/{self._total}; "
                       f"{self._text()}]", err=True)
        self._show()

    def _show(self) -> None:
        if self._bar is not None and self._shown is not None:
            self._bar.update(self._shown, completed=self._counts["ended"], counts=self._text())

    def _text(self) -> str:
        counts = self._counts
        return f"{counts['done']} done, {counts['failed']} failed, {counts['running']} running"
