"""``livecontext batch``: one agent per task of a tasks file (see :mod:`livecontext.actors._batch`)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from livecontext.runtime import UsageError
from livecontext.runtime.persistence import default_store_url

from .._batch import TaskResult, batch_name, read_results, read_tasks, run_batch
from ..blueprint import SystemBlueprint, load_any_blueprint
from ._main import _fail, folder_note, main, run_async


@main.command()
@click.argument("blueprint_path", metavar="BLUEPRINT.toml")
@click.option("--tasks", "tasks_path", required=True, metavar="TASKS.jsonl",
              help='One task per line: {"id": ..., "inputs": [...], "vars": {...}}.')
@click.option("--workers", default=1, show_default=True, type=click.IntRange(min=1),
              help="Worker processes (more than 1 needs --ray).")
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS", help="Run the workers on this Ray cluster.")
@click.option("--concurrency", default=16, show_default=True, type=click.IntRange(min=1),
              help="Tasks run at once by each worker.")
@click.option("--batch", "batch", default=None, metavar="NAME",
              help="Batch name: threads are NAME:TASK_ID (default: the tasks file's name, without extension).")
@click.option("--store", "store_url", default=None, metavar="URL",
              help="Event store all tasks write to (default: the blueprint's, else $LIVECONTEXT_STORE "
                   "or sqlite:.livecontext/livecontext.db).")
@click.option("--out", "out_path", default=None, metavar="RESULTS.jsonl",
              help="Results file, one JSON line per task, appended as tasks end (default: BATCH.results.jsonl).")
@click.option("--base-url", default=None, help="OpenAI-compatible base URL (default: $OPENAI_BASE_URL).")
@click.option("--api-key", default=None, help="API key (default: $OPENAI_API_KEY).")
def batch(blueprint_path: str, tasks_path: str, workers: int, ray_address: str | None, concurrency: int,
          batch: str | None, store_url: str | None, out_path: str | None, base_url: str | None,
          api_key: str | None) -> None:
    """Run one agent made from BLUEPRINT.toml per task of TASKS.jsonl, many at once.

    Each task's thread is BATCH:TASK_ID. `{NAME}` in the blueprint's system prompt, pins
    and the task's inputs is replaced by the task's var NAME. Re-running the same command
    skips the tasks the store says are finished and resumes the others from their logs.
    """
    if workers > 1 or ray_address is not None:
        _fail("batch runs on Ray are not built yet; run with --workers 1 and without --ray (one process)")
    try:
        loaded = load_any_blueprint(blueprint_path)
        if isinstance(loaded, SystemBlueprint):
            raise UsageError(f"{blueprint_path} is a system of agents ([[agents]]); batch runs a one-agent "
                             "blueprint for now")
        tasks = read_tasks(tasks_path)
    except UsageError as exc:
        _fail(str(exc))
    name = batch or batch_name(tasks_path)
    url = store_url or loaded.store or default_store_url()
    out = Path(out_path or f"{name}.results.jsonl")
    written = read_results(out)
    made_folder = folder_note(url)
    console = Console(stderr=True)
    counts: Counter[str] = Counter()

    async def go() -> list[TaskResult]:
        if made_folder:
            click.echo(f"livecontext: note: {made_folder}", err=True)
        with out.open("a", encoding="utf-8") as sink:
            if console.is_terminal:
                with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TextColumn("{task.fields[counts]}"), TimeElapsedColumn(),
                              console=console) as bar:
                    shown = bar.add_task(name, total=len(tasks), counts="")

                    def on_event(kind: str, result: TaskResult | None) -> None:
                        _count(counts, kind, result)
                        bar.update(shown, completed=counts["ended"], counts=_counts_text(counts))
                    return await run_batch(loaded, tasks, url, batch=name, concurrency=concurrency, out=sink,
                                           written=written, on_event=on_event, base_url=base_url, api_key=api_key)

            def on_line(kind: str, result: TaskResult | None) -> None:
                _count(counts, kind, result)
                if result is not None:  # (plain lines when stderr is no terminal: logs, CI)
                    said = f"skipped ({result.status} before)" if result.skipped else result.status
                    error = f": {result.error}" if result.error else ""
                    click.echo(f"{name}: task {result.id} {said}{error} [{counts['ended']}/{len(tasks)}; "
                               f"{_counts_text(counts)}]", err=True)
            return await run_batch(loaded, tasks, url, batch=name, concurrency=concurrency, out=sink,
                                   written=written, on_event=on_line, base_url=base_url, api_key=api_key)

    results = run_async(go)
    by_status = Counter(r.status for r in results)
    skipped = sum(1 for r in results if r.skipped)
    said = ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
    click.echo(f"batch {name}: {len(results)} tasks: {said}" + (f" ({skipped} finished before)" if skipped else "")
               + f"; results in {out}; store {url}")
    if by_status["failed"]:
        sys.exit(1)


def _count(counts: Counter[str], kind: str, result: TaskResult | None) -> None:
    if kind == "start":
        counts["running"] += 1
        return
    counts["running"] -= 1
    counts["ended"] += 1
    counts["failed" if result is not None and result.status == "failed" else "done"] += 1


def _counts_text(counts: Counter[str]) -> str:
    return f"{counts['done']} done, {counts['failed']} failed, {counts['running']} running"
