"""Context-quality benchmark (issue 14, "Show"): what an agent's rendered context keeps of a
long coding session, under a budget, with no recap and with each recap strategy.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_context_quality.py            # 4 transcripts, about a minute
    .venv/bin/python benchmarks/bench_context_quality.py --quick    # 1 transcript of 90 steps, under half a minute
    .venv/bin/python benchmarks/bench_context_quality.py --seed 7 --transcripts 6

It generates coding-agent transcripts from a seed (``transcripts.py``: a fictional repository,
a task statement of a few hundred tokens, 40-140 steps of shell and editor calls with outputs
up to ~3,000 tokens, 17k-78k tokens if sent whole; nothing is downloaded) and replays each
through the real agent (``spawn_agent``: a scripted model whose turns are the transcript's,
an app whose tools return the recorded outputs as plain text), on an SQLite store in a temp
folder and again on a JSONL store, at budgets of 8,000 and 32,000 tokens, with no recap and
with each recap strategy. For each case it prints, from what the model was actually given:

- the task statement present verbatim, in what fraction of model calls (target 100%);
- rendered tokens / budget, mean and max, over the calls where the whole history at LIVE
  exceeds the budget (targets: mean >= 0.85, max <= 1.0);
- coverage: over those calls, of the steps older than the rendered window (the newest
  unbroken run of entries at LIVE/RECENT), the fraction still represented: shown at some
  level, or named in the rendered recap text by id or id range (target >= 0.95);
- the tokens of the last call against sending everything;
- stored bytes per step against the raw text (model text, call arguments, results; target
  <= 1.5x + 400 B), for each store;
- milliseconds per step (wall time / model calls, SQLite with the default fsync);
- (no target) the share of ground-truth facts the context still shows: a line of each edit
  made so far (the start of its new text, a heredoc's command line) and each error still open.

Not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import trio
from attrs import define, field

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

from benchmarks.cache_cost import CACHE_READ_PRICE, CallCosts, PrefixMeter, everything  # noqa: E402
from benchmarks.quality_metrics import (  # noqa: E402
    CALL_TOKENS,
    MESSAGE_TOKENS,
    context_text,
    coverage,
    facts_kept,
    infer_spans,
    message_tokens,
    recap_text,
    task_present,
    units_of,
)
from benchmarks.replay import CapturingModel, ExtractiveRecapModel, Replay, Workspace  # noqa: E402
from benchmarks.fake_outputs import ROOT  # noqa: E402
from benchmarks.transcripts import STEPS, Transcript, generate  # noqa: E402
from livecontext.actors import AgentSettings, spawn_agent  # noqa: E402
from livecontext.actors.history import ContextPolicy, HistoryLimits  # noqa: E402
from livecontext.actors.recap import RecapSettings  # noqa: E402
from livecontext.protocol.agent import BeforeModelCall, Idle, IdleReason, RunUntilIdle  # noqa: E402
from livecontext.protocol.context import HistorySlice, ReadHistory  # noqa: E402
from livecontext.protocol.wire import make_converter  # noqa: E402
from livecontext.runtime import open_runtime  # noqa: E402
from livecontext.runtime.models import ScriptedModel  # noqa: E402
from livecontext.runtime.persistence import open_store  # noqa: E402
from livecontext.runtime.tokens import TokenCounter  # noqa: E402

COUNTER = TokenCounter.from_env()
WINDOWS = "[Window: workspace]\ncwd: /repo"
"""The window of the transcripts' app (benchmarks/replay.py), the same at every call."""
CONVERTER = make_converter()
BUDGETS = (8_000, 32_000)
STRATEGIES: tuple[str | None, ...] = (None, "simple_extract", "structured", "model_summary")
POLICIES = ("stable", "fill")
LONG_STRATEGIES: tuple[str | None, ...] = (None, "simple_extract")
"""The recap cases of the long runs (the others cost minutes and show the same)."""
LOW_WATER: float | None = None
"""The stable policy's low-water mark (``None``: the runtime's default); ``--low-water``."""
LONG_STEPS = 300
LONG_WHOLE = (100_000, 200_000)
"""A long run's steps and its tokens if sent whole."""
FILE = re.compile(r"[\w./-]*\w\.(?:py|cfg|toml|txt|md|ini|json)\b")
"""A file named in a command (``src/halyard/utils.py``, ``reproduce.py``)."""
THREAD = "bench"
SYSTEM_PROMPT = (
    "You are a software engineer working in a checked-out repository at /repo. Use the bash tool to "
    "explore, run code and tests; use str_replace_editor to view and edit files. Think briefly before "
    "each action, make minimal changes, verify them with tests, and finish with a summary of what you "
    "changed and why.")

RUNTIME_DERIVES_LIMITS = True
"""Flip once the runtime derives ``HistoryLimits`` from the budget when a recap is given
without limits: the benchmark then passes none (see :func:`recap_limits`)."""


def recap_limits(budget: int) -> HistoryLimits | None:
    """The limits of a recap case: the runtime's own derivation once it has one; until then
    the unfolded history (counted at RECENT) is limited to the budget, so that the maintainer
    folds from 60% of it (soft) and folds until under 80% (hard)."""
    if RUNTIME_DERIVES_LIMITS:
        return None
    return HistoryLimits(max_tokens=budget)


@define
class Figures:
    """One case's figures, summed over its transcripts."""

    calls: int = 0
    with_task: int = 0
    ratios: list[float] = field(factory=list)
    """Rendered tokens / budget at each call past the budget."""
    older: int = 0
    represented: int = 0
    facts: list[int] = field(factory=lambda: [0, 0])
    last: list[int] = field(factory=list)
    whole: list[int] = field(factory=list)
    steps: int = 0
    raw_bytes: int = 0
    stored: dict[str, int] = field(factory=dict)
    seconds: float = 0.0
    spans_from: set[str] = field(factory=set)
    sent: CallCosts = field(factory=CallCosts)
    """The input of every call, tokens sent and cached (see ``cache_cost.py``)."""
    everything: CallCosts = field(factory=CallCosts)
    """The same calls sending the whole transcript so far."""
    runs: list[tuple[str, CallCosts, CallCosts]] = field(factory=list)
    """Each transcript's (name, sent, everything)."""
    files: list[int] = field(factory=lambda: [0, 0])
    """Files the run's commands named that the final call still names, of all."""


def store_bytes(kind: str, folder: Path) -> int:
    """The bytes a closed store holds: SQLite's file once its WAL is checkpointed, a JSONL
    thread's files."""
    if kind == "sqlite":
        path = folder / "bench.db"
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return path.stat().st_size
    return sum(p.stat().st_size for p in (folder / "jsonl").rglob("*") if p.is_file() and p.name != "lock")


async def replay(transcript: Transcript, budget: int, strategy: str | None, kind: str, folder: Path,
                 figures: Figures | None, policy: str = "stable", low_water: float | None = None) -> float:
    """Run ``transcript`` through an agent; add its figures to ``figures`` (if given); return
    the run's wall time in seconds."""
    url = f"sqlite:{folder / 'bench.db'}" if kind == "sqlite" else f"jsonl:{folder / 'jsonl'}"
    model = CapturingModel(ScriptedModel.from_turns(transcript.turns(), name=f"transcript-{transcript.seed}"))
    recap = RecapSettings(strategy) if strategy else None
    settings = AgentSettings(thread_id=THREAD, system_prompt=SYSTEM_PROMPT, budget=budget, recap=recap,
                             limits=recap_limits(budget) if recap else None,
                             context=ContextPolicy(policy) if low_water is None else ContextPolicy(policy, low_water))
    events: list[BeforeModelCall] = []
    async with await open_store(url) as store:
        async with await store.open_thread(THREAD, create=True, owner="bench") as log, open_runtime() as rt:
            agent = await spawn_agent(rt, log, model, settings, converter=CONVERTER, counter=COUNTER,
                                      inputs=[transcript.task], apps=[Workspace(Replay(transcript.calls()))],
                                      recap_model=ExtractiveRecapModel() if strategy == "model_summary" else None)
            client = rt.client("bench")
            async with rt.open_subscription(agent.events, buffer=4096) as published:
                async with trio.open_nursery() as nursery:
                    async def collect() -> None:
                        async for env in published:
                            if isinstance(env.payload, BeforeModelCall):
                                events.append(env.payload)

                    nursery.start_soon(collect)
                    started = time.perf_counter()
                    idle = await client.ask(agent.engine, RunUntilIdle(), timeout=None)
                    elapsed = time.perf_counter() - started
                    nursery.cancel_scope.cancel()
                while True:  # what was published before the reply and not yet read
                    try:
                        payload = published.receive_nowait().payload
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                    if isinstance(payload, BeforeModelCall):
                        events.append(payload)
            entries = await client.ask(agent.history, ReadHistory(include_folded=True))
    assert isinstance(idle, Idle) and idle.reason is IdleReason.NO_INPUT, idle
    assert isinstance(entries, HistorySlice)
    model.inner.check_all_used()  # type: ignore[attr-defined]
    if figures is not None:
        measure(transcript, budget, model, events, entries, figures)
        figures.seconds += elapsed
        figures.steps += len(model.requests)
    return elapsed


def measure(transcript: Transcript, budget: int, model: CapturingModel, events: Sequence[BeforeModelCall],
            entries: HistorySlice, figures: Figures) -> None:
    """Add the metrics of one run's model calls to ``figures``."""
    units = units_of(entries.entries)
    unit_tokens = transcript.unit_tokens(COUNTER.count)
    fixed = message_tokens(model.requests[0].messages[:1], COUNTER.count) + COUNTER.count(WINDOWS) + 1
    by_call = {e.call_index: e for e in events}
    meter = PrefixMeter(COUNTER.count, MESSAGE_TOKENS, CALL_TOKENS)
    sent = meter.run([r.messages for r in model.requests])
    windows = COUNTER.count(WINDOWS) + MESSAGE_TOKENS
    base = everything([fixed + sum(unit_tokens[: r.call_index + 1]) for r in model.requests], windows)
    for costs, into in ((sent, figures.sent), (base, figures.everything)):
        into.sent += costs.sent
        into.cached += costs.cached
    figures.runs.append((transcript.seed, sent, base))
    named = sorted({f.removeprefix(f"{ROOT}/") for call in transcript.calls() for f in FILE.findall(call.arguments_json())})
    for request in model.requests:
        c = request.call_index
        whole = fixed + sum(unit_tokens[: c + 1])
        messages = request.messages
        figures.calls += 1
        figures.with_task += task_present(messages, transcript.task)
        if c == len(transcript.steps):
            figures.last.append(message_tokens(messages, COUNTER.count))
            figures.whole.append(whole)
            text = context_text(messages)
            figures.files[0] += sum(f in text for f in named)
            figures.files[1] += len(named)
        if whole <= budget:
            continue
        event = by_call.get(c)
        call_budget = event.budget if event is not None and event.budget else budget
        figures.ratios.append(message_tokens(messages, COUNTER.count) / call_budget)
        spans = event.spans if event is not None and event.spans else infer_spans(messages, entries.entries)
        figures.spans_from.add("BeforeModelCall" if event is not None and event.spans else "inferred")
        cov = coverage(units[: c + 1], spans, recap_text(messages))
        figures.older += cov.older
        figures.represented += cov.represented
        edits = [m for s in transcript.steps[:c] for call in s.calls if (m := call.edit_mark())]
        open_errors = [e.line for e in transcript.errors if e.appeared < c and (e.fixed is None or e.fixed >= c)]
        kept, total = facts_kept(context_text(messages), edits + open_errors)
        figures.facts[0] += kept
        figures.facts[1] += total
    figures.raw_bytes += transcript.raw_bytes()


async def run_case(transcripts: Sequence[Transcript], budget: int, strategy: str | None, policy: str,
                   kinds: Sequence[str] = ("sqlite", "jsonl")) -> Figures:
    figures = Figures()
    for t in transcripts:
        for kind in kinds:
            with tempfile.TemporaryDirectory(prefix="lc-quality-") as tmp:
                await replay(t, budget, strategy, kind, Path(tmp), figures if kind == "sqlite" else None, policy,
                             LOW_WATER)
                figures.stored[kind] = figures.stored.get(kind, 0) + store_bytes(kind, Path(tmp))
    return figures


def mark(ok: bool | None) -> str:
    return "" if ok is None else (" PASS" if ok else " FAIL")


def rows(f: Figures, policy: str) -> list[str]:
    """The cells of one case's column (the mean fill of the budget is a target of ``fill``
    alone: ``stable`` trades it for a prefix that stays)."""
    def frac(a: float, b: float) -> float | None:
        return a / b if b else None

    task = frac(f.with_task, f.calls)
    mean = frac(sum(f.ratios), len(f.ratios))
    top = max(f.ratios) if f.ratios else None
    cov = frac(f.represented, f.older)
    facts = frac(f.facts[0], f.facts[1])
    raw = f.raw_bytes / f.steps
    last, whole = sum(f.last) / len(f.last), sum(f.whole) / len(f.whole)
    cells = [
        f"{task:.3f}{mark(task >= 1.0)}" if task is not None else "-",
        f"{mean:.3f}{mark(mean >= 0.85 if policy == 'fill' else None)}" if mean is not None else "- (never past)",
        f"{top:.3f}{mark(top <= 1.0)}" if top is not None else "-",
        f"{cov:.3f}{mark(cov >= 0.95)}" if cov is not None else "- (none older)",
        f"{last / 1000:.1f}k / {whole / 1000:.1f}k = {last / whole:.2f}x",
    ]
    for kind in ("sqlite", "jsonl"):
        if kind not in f.stored:
            cells.append("- (not run)")
            continue
        stored = f.stored[kind] / f.steps
        cells.append(f"{stored:,.0f} = {stored / raw:.2f}x{mark(stored <= 1.5 * raw + 400)}")
    cells += [f"{1000 * f.seconds / f.steps:.2f}", f"{facts:.3f}" if facts is not None else "-"]
    files = frac(f.files[0], f.files[1])
    cells.append(f"{files:.3f}{mark(files >= 0.8)}" if files is not None else "-")
    ratios = [sent.cost / base.cost for _, sent, base in f.runs]
    cells += [f"{f.sent.cached_share:.3f}", f"{f.everything.cached_share:.3f}",
              f"{f.sent.cost / f.everything.cost:.2f}x (max {max(ratios):.2f}x)"]
    return cells


LABELS = (
    ("task in context, of all calls", "= 1.00"),
    ("tokens / budget, mean (past budget)", ">=.85 fill"),
    ("tokens / budget, max (past budget)", "<= 1.00"),
    ("coverage of steps older than window", ">= 0.95"),
    ("last call vs sending everything", "-"),
    ("stored B/step sqlite, vs raw", "<=1.5x+400"),
    ("stored B/step jsonl, vs raw", "<=1.5x+400"),
    ("ms per step (sqlite)", "-"),
    ("facts shown (edits made, open errors)", "-"),
    ("files named in the final call, of all", ">= 0.80"),
    ("cached share of input tokens", "-"),
    ("cached share, sending everything", "-"),
    (f"cost vs sending everything (cache {CACHE_READ_PRICE:g}x)", "-"),
)


def table(budget: int, policy: str, results: dict[str | None, Figures]) -> None:
    any_case = next(iter(results.values()))
    past = len(any_case.ratios)
    print(f"\nbudget {budget:,} tokens, policy {policy}: {any_case.calls} model calls, {past} with the whole history "
          f"past the budget; raw text {any_case.raw_bytes / any_case.steps:,.0f} B/step")
    names = ["no recap" if s is None else s + ("*" if s == "model_summary" else "") for s in results]
    width = 24
    print(f"  {'':41s}{'target':>11s}  " + "".join(f"{n:>{width}s}" for n in names))
    columns = [rows(f, policy) for f in results.values()]
    for i, (label, target) in enumerate(LABELS):
        print(f"  {label:41s}{target:>11s}  " + "".join(f"{col[i]:>{width}s}" for col in columns))
    sources = set().union(*(f.spans_from for f in results.values()))
    if sources and sources != {"BeforeModelCall"}:
        print("  (levels per entry: " + (
            "inferred from the messages: BeforeModelCall.spans was empty" if sources == {"inferred"} else
            f"from {', '.join(sorted(sources))}") + ")")


def cost_table(per_run: Sequence[tuple[str, int, str | None, str, CallCosts, CallCosts]]) -> None:
    """Each transcript's cost against sending everything, and its cached share, by budget,
    recap strategy and policy."""
    print(f"\ncost of each run's input vs sending everything (cache reads at {CACHE_READ_PRICE:g}x), "
          "and the cached share of its input tokens:")
    strategies = sorted({s or "" for _, _, s, _, _, _ in per_run})
    policies = sorted({p for _, _, _, p, _, _ in per_run}, key=POLICIES.index)
    heads = [f"{s or 'no recap'} {p}" for s in strategies for p in policies]
    print(f"  {'transcript':>14s} {'budget':>7s}  {'whole':>9s}" + "".join(f"{h:>26s}" for h in heads))
    rows_seen: dict[tuple[str, int], dict[tuple[str, str], tuple[CallCosts, CallCosts]]] = {}
    for name, budget, s, p, sent, base in per_run:
        rows_seen.setdefault((name, budget), {})[(s or "", p)] = (sent, base)
    for (name, budget), cells in rows_seen.items():
        base = next(iter(cells.values()))[1]
        line = f"  {name:>14s} {budget:>7,}  {base.sent[-1]:>9,}"
        for s in strategies:
            for p in policies:
                got = cells.get((s, p))
                line += f"{'-':>26s}" if got is None else f"{f'{got[0].cost / got[1].cost:.3f}x, cached {got[0].cached_share:.2f}':>26s}"
        print(line)


async def main(quick: bool, seed: int, count: int | None, policies: Sequence[str], long_runs: int) -> None:
    began = time.perf_counter()
    n = count if count is not None else (1 if quick else 4)
    lo, hi = STEPS
    targets = [90] if quick and count is None else [round(lo + (hi - lo) * i / max(n - 1, 1)) for i in range(n)]
    names = ["quick"] if quick and count is None else [str(i) for i in range(n)]
    transcripts = [generate(f"{seed}.{name}", steps=s) for name, s in zip(names, targets)]
    print(f"{len(transcripts)} transcript(s), seed {seed}:")
    for t in transcripts:
        outputs = [COUNTER.count(c.output) for c in t.calls()]
        heredocs = [COUNTER.count(c.arguments_json()) for c in t.calls() if "<<'EOF'" in c.arguments.get("command", "")]
        print(f"  {t.seed}: {t.project}, {len(t.steps)} steps + answer, {t.whole_tokens(COUNTER.count):,} tokens whole, "
              f"task {COUNTER.count(t.task)}, largest output {max(outputs):,}, largest heredoc {max(heredocs):,}, "
              f"errors {', '.join(f'{e.id}@{e.appeared}' + (f'-{e.fixed}' if e.fixed is not None else ' (open)') for e in t.errors)}")
    limits = "derived by the runtime" if RUNTIME_DERIVES_LIMITS else "max_tokens = budget (benchmark's stand-in)"
    print(f"recap cases: RecapSettings(strategy) defaults, limits {limits}; fsync {os.environ.get('LIVECONTEXT_FSYNC', 'full')}")
    per_run: list[tuple[str, int, str | None, str, CallCosts, CallCosts]] = []
    for budget in BUDGETS:
        for policy in policies:
            results = {s: await run_case(transcripts, budget, s, policy) for s in STRATEGIES}
            table(budget, policy, results)
            per_run += [(name, budget, s, policy, sent, base) for s, f in results.items() for name, sent, base in f.runs]
    if long_runs:
        longs = [generate(f"{seed}.long{i}", steps=LONG_STEPS, whole=LONG_WHOLE) for i in range(long_runs)]
        print(f"\n{long_runs} long run(s) of {LONG_STEPS} steps: "
              + ", ".join(f"{t.seed} {t.whole_tokens(COUNTER.count):,} tokens whole" for t in longs))
        for budget in BUDGETS:
            for policy in policies:
                results = {s: await run_case(longs, budget, s, policy, kinds=("sqlite",)) for s in LONG_STRATEGIES}
                table(budget, policy, results)
                per_run += [(name, budget, s, policy, sent, base)
                            for s, f in results.items() for name, sent, base in f.runs]
    cost_table(per_run)
    print(f"\n* model_summary's recap model is a stand-in, not a real model: {ExtractiveRecapModel.__name__} "
          "(benchmarks/replay.py) reads the steps in its prompt and answers with one line per step (the line "
          "that says most: an error, a test outcome, an edit, the command), merging the oldest into id ranges "
          "(e12–e40) to fit the length it is asked for, and overshooting that length by 30% every 4th call. The "
          "agent's model is scripted: its turns are the transcript's, so the model never reacts to what it was "
          "given; the metrics measure what it was given. Tool outputs are recorded text, returned by an app "
          "(benchmarks/replay.py); token counts are the runtime's counter's.")
    print(f"whole run: {time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one transcript of 90 steps (seconds)")
    parser.add_argument("--seed", type=int, default=14, help="the transcripts' seed (default 14)")
    parser.add_argument("--transcripts", type=int, default=None, help="how many transcripts (default 4; 1 with --quick)")
    parser.add_argument("--policies", default=",".join(POLICIES), help="render policies to run, comma-separated "
                        "(default: stable,fill)")
    parser.add_argument("--long", type=int, default=None, metavar="N",
                        help=f"also N generated runs of {LONG_STEPS} steps (default 2; 0 with --quick)")
    parser.add_argument("--low-water", type=float, default=None,
                        help="the stable policy's low-water mark (default: the runtime's)")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="budgets, comma-separated")
    args = parser.parse_args()
    LOW_WATER = args.low_water
    BUDGETS = tuple(int(b) for b in args.budgets.split(","))
    chosen = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = [p for p in chosen if p not in POLICIES]
    if unknown or not chosen:
        parser.error(f"--policies takes {' and/or '.join(POLICIES)}, got {args.policies!r}")
    long_runs = args.long if args.long is not None else (0 if args.quick else 2)
    trio.run(main, args.quick, args.seed, args.transcripts, chosen, long_runs)
