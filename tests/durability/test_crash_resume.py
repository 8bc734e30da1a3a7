"""An agent process killed with SIGKILL at random moments resumes with nothing lost or done twice.

A scripted agent makes 40 notebook edits in a row (one tool call per model turn), then
answers. A real ``livecontext run`` subprocess runs it on an SQLite store and is killed with SIGKILL
at a seeded random moment; the same command is run again, killed again (three times per seed),
then left to finish. Its history and notebook must equal those of an uninterrupted run.

The moment is counted in the run's work, not in time: the kill is sent once the run has
reported a seeded number of engine events (of the ~400 a whole run reports), so a seed meets
the run at the same point of its work however busy the machine is (give or take the few
events reported while the kill is on its way).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from livecontext.actors.agent._format import apps_json, entry_json
from livecontext.actors.history import HistoryState, load_state
from livecontext.protocol.history import EngineState
from livecontext.protocol.wire import make_converter
from livecontext.runtime.persistence import ThreadNotFoundError, open_store

from tests.support.postgres import Cluster

from tests.support.command import LIVECONTEXT, cli_env, notebook_turns, write_script

EDITS = 40
SEEDS = (1, 2, 3, 4)
KILLS = 3
"""Kills per seed; the run after the last kill is left to finish (it resumes once more)."""
MAX_RUNS = 10
"""A bound on runs per seed, so that a resume that never finishes fails instead of hanging."""
FINAL_ANSWER = f"done: {EDITS} lines"


def run_command(script: Path, store_url: str, events: Path) -> list[str]:
    """The one command every run (first or resumed) uses."""
    return [*LIVECONTEXT, "run", "--model", f"scripted:{script}", "--store", store_url,
            "--thread", "t", "--input", "go", "--json", "--events", str(events)]


async def read_thread(store_url: str) -> HistoryState | None:
    """The thread's committed state, read from the store in this process (None: no thread yet)."""
    async with await open_store(store_url) as store:
        try:
            reader = await store.open_reader("t")
        except ThreadNotFoundError:
            return None
        async with reader:
            return await load_state(reader, make_converter(), "t")


def comparable(state: HistoryState) -> dict[str, Any]:
    """What must be identical between runs: entries (less times and authors) and the apps."""
    entries = []
    for entry in state.entries:
        data = entry_json(entry)
        del data["created_at"], data["author"]
        entries.append(data)
    return {"state": state.state.value, "entries": entries,
            "apps": apps_json(state.app_histories())}


def finished(state: HistoryState | None) -> bool:
    """A thread waiting for input after at least one entry has recorded its final answer."""
    return state is not None and state.state is EngineState.WAITING_INPUT and bool(state.entries)


async def run_once(command: list[str], events: Path, kill_after: int | None) -> subprocess.CompletedProcess[str] | None:
    """Run the command; with ``kill_after``, SIGKILL it once it has reported that many engine
    events (or has ended). Returns the finished process, or None when it was killed."""
    events.unlink(missing_ok=True)
    with open(events.with_suffix(".out"), "wb+") as out, open(events.with_suffix(".err"), "wb+") as err:
        proc = await trio.lowlevel.open_process(command, stdout=out, stderr=err, env=cli_env())
        killed = False
        try:
            if kill_after is not None:
                while proc.poll() is None and reported(events) < kill_after:
                    await trio.sleep(0.01)
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    killed = True
            await proc.wait()
        finally:
            if proc.returncode is None:  # the test itself is being cancelled
                proc.kill()
                with trio.CancelScope(shield=True):
                    await proc.wait()
        if killed:
            return None
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(command, proc.returncode, out.read().decode(), err.read().decode())


def reported(events: Path) -> int:
    """How many engine events a run has reported (whole lines) so far."""
    try:
        return events.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


async def crash_until_done(root: Path, script: Path, seed: int, store_url: str | None = None) -> dict[str, Any]:
    """Run, kill and resume one agent until it is done (in ``store_url``; by default an SQLite
    store under ``root``); what happened along the way."""
    root.mkdir()
    store_url = store_url or f"sqlite:{root / 'db'}"
    events = root / "events.jsonl"
    command = run_command(script, store_url, events)
    rng = random.Random(seed)
    kills_mid_work: list[str] = []
    notes = 0
    for run in range(MAX_RUNS):
        kill_after = rng.randint(1, 200)
        done = await run_once(command, events, kill_after if run < KILLS else None)
        if done is not None:
            assert done.returncode == 0, done.stderr
            notes += "was stopped in the middle of a step" in done.stderr
            summary = json.loads(done.stdout)
            assert summary["state"] == "WaitingInput"
            assert summary["entries"][-1]["levels"]["live"] == FINAL_ANSWER
            break
        state = await read_thread(store_url)
        if finished(state):  # killed after its last commit, before it could exit
            break
        kills_mid_work.append(state.state.value if state is not None else "no thread yet")
    else:
        raise AssertionError(f"seed {seed}: not done after {MAX_RUNS} runs")
    final = await read_thread(store_url)
    assert final is not None
    return {"final": comparable(final), "kills": kills_mid_work}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_an_agent_killed_at_random_moments_ends_as_if_never_interrupted(
        tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    # (postgresql: each run in its own database of the session's cluster; the reference run
    # stays on SQLite: the histories must agree whatever store a run used)
    cluster: Cluster | None = request.getfixturevalue("postgres_cluster") if backend == "postgresql" else None
    script = write_script(tmp_path / "script.json", notebook_turns(EDITS, delay_s=0.02))
    reference: dict[str, Any] = {}
    crashed: dict[int, dict[str, Any]] = {}
    limiter = trio.CapacityLimiter(2)

    async def uninterrupted() -> None:
        async with limiter:
            root = tmp_path / "reference"
            root.mkdir()
            events = root / "events.jsonl"
            done = await run_once(run_command(script, f"sqlite:{root / 'db'}", events), events, None)
            assert done is not None and done.returncode == 0, done
            state = await read_thread(f"sqlite:{root / 'db'}")
            assert state is not None
            reference.update(comparable(state))
            reference["run_json_entries"] = json.loads(done.stdout)["entries"]

    async def with_crashes(seed: int) -> None:
        async with limiter:
            url = None if cluster is None else cluster.url(cluster.new_database())
            crashed[seed] = await crash_until_done(tmp_path / f"seed-{seed}", script, seed, url)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(uninterrupted)
        for seed in SEEDS:
            nursery.start_soon(with_crashes, seed)

    expected_notebook = "\n".join(f"line {k}" for k in range(EDITS))
    entries = reference["entries"]
    assert reference["apps"] == {"notebook": expected_notebook}
    assert [e["kind"] for e in entries].count("model_output") == EDITS + 1
    assert [e["id"] for e in entries] == [f"e{i}" for i in range(1, len(entries) + 1)]
    assert len(reference["run_json_entries"]) == len(entries)
    for seed, run in crashed.items():
        final = run["final"]
        assert final["entries"] == entries, f"seed {seed}: the history differs from the uninterrupted run"
        assert final["apps"] == reference["apps"], f"seed {seed}: the notebook differs"
        notebook = final["apps"]["notebook"]
        for k in range(EDITS):
            assert notebook.split("\n").count(f"line {k}") == 1, f"seed {seed}: line {k}"
        inputs = [e for e in final["entries"] if e["kind"] == "model_input"]
        assert [e["levels"]["live"] for e in inputs] == ["go"], f"seed {seed}: input fed twice"
        results = [r for e in final["entries"] for r in e.get("results", [])]
        assert [r["call_id"] for r in results] == [f"call_{k}_0" for k in range(EDITS)]
        assert {r["status"] for r in results} == {"ok"}
    kills = [k for run in crashed.values() for k in run["kills"]]
    assert kills, "no run was killed in the middle of its work: the test exercised nothing"
