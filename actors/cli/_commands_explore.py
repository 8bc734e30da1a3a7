"""``livecontext explore``: a system blueprint run under many seeds (see ``actors.explore``)."""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path
from typing import Any

import click

from ._main import _fail, import_from_cwd, main, print_json, run_async


@main.command()
@click.argument("blueprint", type=click.Path(path_type=Path))
@click.option("--seeds", "seed_count", type=click.IntRange(min=1), default=100, show_default=True, metavar="N",
              help="Run seeds 0..N-1.")
@click.option("--check", "check_path", default=None, metavar="MODULE:FN",
              help="The invariant: FN(outcome) returns false or raises AssertionError to fail a seed "
                   "(imported from the current folder). Without it a seed fails on an error, a stall or a deadlock.")
@click.option("--inputs", "inputs_path", default=None, type=click.Path(path_type=Path), metavar="FILE",
              help="The inputs, a JSON or TOML object of agent -> [texts] (default: the blueprint's).")
@click.option("--faults", "faults_text", default="", metavar="model,tool,kill",
              help="Faults to inject at a point each seed picks: model (a model error), tool (an app's "
                   "tool raises), kill (the system closed mid-call and opened again on its store).")
@click.option("--replay", "replay", type=click.IntRange(min=0), default=None, metavar="SEED",
              help="Run this one seed again (the same deliveries) and write its trace page.")
@click.option("--out", "out", default=None, type=click.Path(path_type=Path), metavar="DIR",
              help="Where to write failing runs' trace pages (default: a new temporary folder).")
@click.option("--stall-timeout", "stall_timeout", type=click.FloatRange(min=0.1), default=5.0, show_default=True,
              metavar="SECONDS", help="A seed whose run delivers nothing (or whose handler does not finish) "
                                      "for this long fails as stalled: a deadlock. Raise it on a loaded machine.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def explore(blueprint: Path, seed_count: int, check_path: str | None, inputs_path: Path | None,
            faults_text: str, replay: int | None, out: Path | None, stall_timeout: float, as_json: bool) -> None:
    """Run a system blueprint under N schedules (the order of every delivery between its
    actors picked by a seed), print the distinct outcomes, and for each failing seed the
    reason, the command that replays it and its trace page. Exit 1 if a seed failed."""
    from livecontext.runtime import UsageError

    from ..explore import FAULTS, explore_system, load_check, load_inputs, write_trace_page
    from ..blueprint import load_system_blueprint

    import_from_cwd()
    try:
        bp = load_system_blueprint(blueprint)
        faults = tuple(dict.fromkeys(f.strip() for f in faults_text.split(",") if f.strip()))
        for f in faults:
            if f not in FAULTS:
                raise UsageError(f"unknown fault {f!r}: give --faults as a comma-separated list of {', '.join(FAULTS)}")
        check = load_check(check_path) if check_path is not None else None
        inputs = load_inputs(inputs_path) if inputs_path is not None else None
        for name in inputs or {}:
            if name not in {a.name for a in bp.agents}:
                raise UsageError(f"--inputs names agent {name!r}, which system {bp.name!r} does not have; "
                                 f"its agents: {', '.join(a.name for a in bp.agents)}")
        folder = out if out is not None else Path(tempfile.mkdtemp(prefix="livecontext-explore-"))
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"--out {folder} is a file: give a folder")
        folder.mkdir(parents=True, exist_ok=True)
    except UsageError as exc:
        _fail(str(exc).splitlines()[0], 2)

    flags = [*(["--check", check_path] if check_path else []), *(["--inputs", str(inputs_path)] if inputs_path else []),
             *(["--faults", ",".join(faults)] if faults else []),
             *(["--stall-timeout", f"{stall_timeout:g}"] if stall_timeout != 5.0 else [])]

    def replay_command(seed: int) -> str:
        return shlex.join(["livecontext", "explore", str(blueprint), "--replay", str(seed), *flags])

    common: dict[str, Any] = {"inputs": inputs, "check": check, "faults": faults, "stall_timeout": stall_timeout}

    if replay is not None:
        async def again() -> tuple[Path, Any]:
            return await write_trace_page(bp, replay, folder, **common)

        page, run = run_async(again)
        shown = str(page) if run.outcome is not None else None
        if as_json:
            print_json({"seed": run.seed, "ok": run.ok, "failure": run.failure, "summary": run.summary,
                        "faults": list(run.outcome.faults) if run.outcome else [],
                        "deliveries": len(run.trace), "trace": shown})
        else:
            click.echo(f"seed {run.seed}: {run.summary}")
            if run.outcome is not None and run.outcome.faults:
                click.echo(f"  faults: {'; '.join(run.outcome.faults)}")
            click.echo(f"  {len(run.trace)} deliveries; trace page: {shown or '(none: the run recorded nothing)'}")
        raise SystemExit(0 if run.ok else 1)

    async def go() -> tuple[Any, dict[int, tuple[Path | None, bool]]]:
        found = await explore_system(bp, range(seed_count), **common)
        pages: dict[int, tuple[Path | None, bool]] = {}
        for _summary, seeds in found.groups():  # one page per distinct failure: its first seed
            first = next(r for r in found.runs if r.seed == seeds[0])
            if first.ok:
                continue
            page, again = await write_trace_page(bp, first.seed, folder, **common)
            pages[first.seed] = (page if again.outcome is not None else None, again.trace == first.trace)
        return found, pages

    found, pages = run_async(go)
    failures = found.failures
    groups = found.groups()
    if as_json:
        print_json({
            "blueprint": str(blueprint), "seeds": seed_count, "distinct_traces": found.distinct_traces,
            "outcomes": [{"summary": s, "count": len(seeds), "seeds": list(seeds)} for s, seeds in groups],
            "failures": [{"seed": r.seed, "reason": r.failure, "replay": replay_command(r.seed),
                          "trace": str(pages[r.seed][0]) if r.seed in pages and pages[r.seed][0] else None,
                          "replayed_same": pages[r.seed][1] if r.seed in pages else None} for r in failures],
            "out": str(folder),
        })
    else:
        click.echo(f"explored {blueprint}: {seed_count} seeds, {found.distinct_traces} distinct delivery orders, "
                   f"{len(groups)} distinct outcome{'s' if len(groups) != 1 else ''}")
        for summary, seeds in groups:
            shown = ", ".join(map(str, seeds[:5])) + (", ..." if len(seeds) > 5 else "")
            click.echo(f"  {len(seeds):>5} seed{'s' if len(seeds) != 1 else ' '}  {summary}  (seeds {shown})")
        for r in failures:
            click.echo(f"failing seed {r.seed}: {r.failure}")
            click.echo(f"  replay: {replay_command(r.seed)}")
            if r.seed in pages:
                written, same = pages[r.seed]
                click.echo(f"  trace page: {written or '(none: the run recorded nothing)'}"
                           + ("" if same else "  (its replay took other deliveries: the run is not reproducible)"))
        if failures:
            click.echo(f"{len(failures)} of {seed_count} seeds failed; trace pages (the first seed of each "
                       f"distinct failure) in {folder}")
    raise SystemExit(1 if failures else 0)
