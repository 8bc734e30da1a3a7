"""``livecontext batch --workers N`` on a real local Ray cluster (issue 19, point 3)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from click.testing import CliRunner, Result  # noqa: E402

from livecontext.actors.cli import main  # noqa: E402
from tests.support.postgres import free_port  # noqa: E402

SCRIPT = {"turns": [{"text": "the answer", "delay_s": 0.05}]}
BLUEPRINT = 'model = "scripted:script.json"\n'
TASKS = [{"id": f"t{i}", "inputs": [f"question {i}"]} for i in range(6)]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """One local Ray cluster for the module, bound to loopback, with a small object store."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    ray.init(address="local", include_dashboard=False, _node_ip_address="127.0.0.1",
             object_store_memory=80 * 1024 * 1024, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT), encoding="utf-8")
    (tmp_path / "agent.toml").write_text(BLUEPRINT, encoding="utf-8")
    (tmp_path / "six.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TASKS), encoding="utf-8")
    return tmp_path


def batch(*args: str, store: str = "sqlite:b.db") -> Result:
    return CliRunner().invoke(main, ["batch", "agent.toml", "--tasks", "six.jsonl", "--store", store, *args])


@pytest.mark.parametrize("workers", [1, 2])
def test_workers_on_ray_run_every_task_once_into_the_shared_store(cluster: None, project: Path, workers: int) -> None:
    ran = batch("--workers", str(workers), "--concurrency", "2", "--ray", "auto")
    assert ran.exit_code == 0, ran.stderr
    lines = (project / "six.results.jsonl").read_text().splitlines()
    got = {obj["id"]: obj for obj in map(json.loads, lines)}
    assert len(lines) == 6 and sorted(got) == [f"t{i}" for i in range(6)]
    assert all(r["status"] == "answered" and r["result"] == "the answer" and r["steps"] == 1 for r in got.values())
    again = batch("--workers", str(workers), "--ray", "auto")
    assert again.exit_code == 0, again.stderr
    assert "(6 finished before)" in again.stdout
    assert len((project / "six.results.jsonl").read_text().splitlines()) == 6


def test_a_ray_address_with_no_cluster_is_one_line(project: Path) -> None:
    ran = batch("--ray", "127.0.0.1:1")
    assert ran.exit_code == 1
    assert ran.stderr.count("\n") == 1 and "no Ray cluster answers at 127.0.0.1:1" in ran.stderr


CRASHING_TOOL = '''
import os
import signal
from pathlib import Path


def crash_once() -> str:
    """Note the call; the first call ever kills this worker process with SIGKILL (kill -9)."""
    calls = Path(__file__).with_name("calls")
    with calls.open("a") as f:
        f.write(f"{os.getpid()}\\n")
    marker = Path(__file__).with_name("crashed")
    if not marker.exists():
        marker.write_text("once")
        os.kill(os.getpid(), signal.SIGKILL)
    return "survived"
'''


def test_a_worker_killed_mid_tool_loses_nothing_and_every_task_ends_once(cluster: None, project: Path) -> None:
    (project / "crash_tools.py").write_text(CRASHING_TOOL, encoding="utf-8")
    (project / "agent.toml").write_text(BLUEPRINT + '\n[[tools]]\nuse = "crash_tools:crash_once"\n', encoding="utf-8")
    (project / "script.json").write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "crash_once", "arguments": {}}]}, {"text": "after the tool"}]}), encoding="utf-8")
    ran = batch("--workers", "2", "--concurrency", "1", "--ray", "auto")  # (a worker holds one task at a time)
    assert ran.exit_code == 0, ran.stderr
    callers = (project / "calls").read_text().split()
    assert len(set(callers)) >= 2  # (the killed worker and at least one other ran the tool)
    assert len(callers) == 6  # (each task's tool ran once: the killed call is recorded as interrupted, not re-run)
    lines = [json.loads(line) for line in (project / "six.results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in lines) == [f"t{i}" for i in range(6)]  # (each task one line)
    assert all(r["status"] == "answered" and r["result"] == "after the tool" for r in lines)
    kinds = {r["id"]: entry_kinds(f"six/{r['id']}") for r in lines}
    assert all(k == ["ModelInputEntry", "ModelOutputEntry", "ToolResultsEntry", "ModelOutputEntry"]
               for k in kinds.values()), kinds  # (no entry lost or written twice)
    interrupted = [r["id"] for r in lines if "interrupted" in tool_result_text(f"six/{r['id']}")]
    assert len(interrupted) == 1  # (the task whose worker died in the tool)


def entry_kinds(thread: str) -> list[str]:
    return [type(e).__name__ for e in state_of(thread).entries]


def tool_result_text(thread: str) -> str:
    from livecontext.protocol.history import ToolResultsEntry
    [results] = [e for e in state_of(thread).entries if isinstance(e, ToolResultsEntry)]
    return repr(results)


def state_of(thread: str, store_url: str = "sqlite:b.db") -> Any:
    import trio

    from livecontext.actors.history import load_state
    from livecontext.protocol.wire import make_converter
    from livecontext.runtime.persistence import open_store

    async def go() -> Any:
        async with await open_store(store_url) as store:
            reader = await store.open_reader(thread)
            async with reader:
                return await load_state(reader, make_converter(), thread)
    return trio.run(go)


def test_more_workers_than_the_cluster_has_cpus_is_one_line(cluster: None, project: Path) -> None:
    cpus = int(ray.cluster_resources()["CPU"])
    ran = batch("--workers", str(cpus + 1), "--ray", "auto")
    assert ran.exit_code == 1
    assert ran.stderr.count("\n") == 1 and f"has {cpus} CPUs" in ran.stderr, ran.stderr


TEAM = '''
system = "team"

[[agents]]
name = "lead"
model = "scripted:lead.json"

[[agents]]
name = "helper"
model = "scripted:helper.json"
'''


def test_a_system_blueprint_runs_one_system_per_task_on_ray_workers(cluster: None, project: Path) -> None:
    ask = {"tool_calls": [{"name": "ask_agent", "arguments": {"to": "helper", "question": "What do you know?"}}]}
    (project / "lead.json").write_text(json.dumps({"turns": [ask, {"text": "lead answer"}]}), encoding="utf-8")
    (project / "helper.json").write_text(json.dumps({"turns": [{"text": "helper facts"}]}), encoding="utf-8")
    (project / "team.toml").write_text(TEAM, encoding="utf-8")
    ran = CliRunner().invoke(main, ["batch", "team.toml", "--tasks", "six.jsonl", "--store", "sqlite:b.db",
                                    "--workers", "2", "--concurrency", "2", "--ray", "auto"])
    assert ran.exit_code == 0, ran.stderr
    lines = [json.loads(line) for line in (project / "six.results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in lines) == [f"t{i}" for i in range(6)]
    assert all(r == {"id": r["id"], "thread": f"six/{r['id']}.lead", "status": "answered", "result": "lead answer",
                     "steps": 3, "tokens": r["usage"]["input_tokens"] + r["usage"]["output_tokens"],
                     "usage": r["usage"], "error": None} for r in lines), lines
    assert all(r["usage"]["model_calls"] == 3 and r["usage"]["input_tokens"] > 0 for r in lines), lines


def test_two_workers_share_one_postgresql_store(cluster: None, project: Path, postgres_url: str) -> None:
    ran = batch("--workers", "2", "--concurrency", "2", "--ray", "auto", store=postgres_url)
    assert ran.exit_code == 0, ran.stderr
    lines = [json.loads(line) for line in (project / "six.results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in lines) == [f"t{i}" for i in range(6)]
    assert all(r["status"] == "answered" and r["result"] == "the answer" for r in lines)
    assert state_of("six/t3", postgres_url).model_outputs == 1  # (in the database, not in a worker)
    again = batch("--workers", "2", "--ray", "auto", store=postgres_url)
    assert again.exit_code == 0 and "(6 finished before)" in again.stdout, again.stderr


def test_an_unreachable_postgresql_is_one_line_before_any_worker_starts(project: Path) -> None:
    port = free_port()
    ran = batch("--workers", "2", store=f"postgresql://someone@127.0.0.1:{port}/db")
    assert ran.exit_code == 1
    assert ran.stderr.count("\n") == 1 and f"cannot reach PostgreSQL at 127.0.0.1:{port}" in ran.stderr, ran.stderr
    assert not (project / "six.results.jsonl").read_text()  # (no task ran)
