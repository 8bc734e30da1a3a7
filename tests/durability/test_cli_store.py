"""Looking into a store from the command line: threads, history, state, audit, render, fork.

Most commands run in this process through click's runner (fast); the concurrent-writer test
runs real ``livecontext`` processes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import trio
from click.testing import CliRunner, Result
from livecontext.actors import AgentSettings
from livecontext.actors.cli import main
from livecontext.actors.agent._session import open_session, run_until_idle
from livecontext.runtime.models import ScriptedModel

from tests.support.command import LIVECONTEXT, cli_env, json_lines, notebook_turns, run_cli, url_for, write_script

EDITS = 3


def lc(*args: str) -> Result:
    """``livecontext ARGS`` in this process."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def ok_json(*args: str) -> Any:
    """The JSON printed by a command that must succeed."""
    result = lc(*args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def one_line_error(result: Result) -> str:
    """Check ``result`` failed with one ``livecontext: error:`` line on stderr; return it."""
    assert result.exit_code != 0
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("livecontext: error: "), result.stderr
    return lines[0]


def files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(params=["sqlite", "jsonl", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store of each backend that keeps data (``postgresql``: a fresh database of the
    session's throwaway cluster) holding thread ``t``: an input, three notebook edits, an answer."""
    if request.param == "postgresql":
        url = str(request.getfixturevalue("postgres_url"))
    else:
        url = url_for(request.param, tmp_path / "s")
    script = write_script(tmp_path / "script.json", notebook_turns(EDITS))
    summary = ok_json("run", "--model", f"scripted:{script}", "--store", url, "--thread", "t",
                      "--input", "go", "--json")
    assert summary["state"] == "WaitingInput"
    return url


def audit(url: str, thread: str = "t") -> list[dict[str, Any]]:
    result = lc("audit", "--store", url, "--thread", thread, "--json")
    assert result.exit_code == 0, result.stderr
    return json_lines(result.stdout)


def test_threads_lists_each_thread_with_entry_count_state_and_last_activity(store: str) -> None:
    ok_json("fork", "--store", store, "--thread", "t", "--at", "5", "--new-thread", "f")  # (seq 4: a compaction)
    result = lc("threads", "--store", store, "--json")
    assert result.exit_code == 0, result.stderr
    rows = json_lines(result.stdout)
    assert [r["thread"] for r in rows] == ["f", "t"]
    f, t = rows
    assert (t["entries"], t["state"], t["seq"]) == (2 + 2 * EDITS, "WaitingInput", len(audit(store)))
    assert (f["entries"], f["state"], f["forked_from"], f["forked_at"]) == (2, "WaitingToolResults", "t", 5)
    assert t["last_activity"] == audit(store)[-1]["sent_at"]
    text = lc("threads", "--store", store)
    assert text.exit_code == 0 and "WaitingInput" in text.stdout and " 8 entries" in text.stdout


def test_history_prints_the_entries_as_run_json_does_and_as_of_any_seq(store: str, tmp_path: Path) -> None:
    whole = ok_json("history", "--store", store, "--thread", "t", "--json")
    assert whole["thread"] == "t"
    ran = ok_json("run", "--model", f"scripted:{tmp_path / 'script.json'}", "--store", store,
                  "--thread", "t", "--json")  # nothing to do: prints the same entries
    assert ran["entries"] == whole["entries"]
    records = audit(store)
    for at in range(len(records) + 1):
        appended = sum(r["kind"] in ("EntryAppended", "ToolResultsAppended") for r in records[:at])
        as_of = ok_json("history", "--store", store, "--thread", "t", "--json", "--at", str(at))
        assert as_of["entries"] == whole["entries"][:appended]


def test_state_prints_state_counts_notebook_and_seq_as_of_any_seq(store: str) -> None:
    records = audit(store)
    now = ok_json("state", "--store", store, "--thread", "t", "--json")
    usage = now.pop("usage")
    assert now == {"state": "WaitingInput", "status": "waiting_user", "entries": 2 + 2 * EDITS, "pending_tool_results": 0,
                   "apps": {"notebook": "line 0\nline 1\nline 2"}, "seq": len(records), "budget": 8000,
                   "sub_agents": []}
    assert usage["model_calls"] == EDITS + 1  # (each edit's call, and the answer)
    first_result = next(r["seq"] for r in records if r["kind"] == "ToolResultRecorded")
    before = ok_json("state", "--store", store, "--thread", "t", "--json", "--at", str(first_result - 1))
    after = ok_json("state", "--store", store, "--thread", "t", "--json", "--at", str(first_result))
    assert (before["state"], before["status"], before["pending_tool_results"], before["apps"]) == (
        "WaitingToolResults", "active", 0, {"notebook": ""})
    assert (after["state"], after["pending_tool_results"], after["apps"]) == (
        "ToolResultsReady", 1, {"notebook": "line 0"})
    assert after["seq"] == first_result


def test_audit_prints_one_json_line_per_record(store: str) -> None:
    records = audit(store)
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert all(set(r) == {"seq", "sender", "sent_at", "kind", "summary"} for r in records)
    kinds = [r["kind"] for r in records]
    assert kinds[:3] == ["SystemPromptSet", "ThreadConfigured", "EntryAppended"]
    assert records[1]["summary"] == ("budget 8000; tools notebook_replace, notebook_replace_span, "
                                     "task_complete, task_abandon, output, wait_user_response; apps notebook")
    assert kinds.count("ToolResultRecorded") == EDITS
    results = [r for r in records if r["kind"] == "ToolResultRecorded"]
    assert all("+ effect NotebookEdited" in r["summary"] and r["sender"] == "engine/t" for r in results)
    entries = [r["summary"] for r in records if r["kind"] == "ToolResultsAppended"]
    assert entries == [f"ToolResultsEntry e{3 + 2 * k}: the results recorded" for k in range(EDITS)]


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_audit_of_a_flipped_byte_in_a_compressed_payload_is_one_error_line_naming_the_thread_and_seq(
        store: str) -> None:
    path = store.removeprefix("sqlite:")
    with sqlite3.connect(path) as conn:  # a compressed record before the last one: bit rot
        seq, payload = conn.execute("SELECT seq, payload FROM records WHERE typeof(payload) = 'blob'"
                                    " ORDER BY seq LIMIT 1").fetchone()
        damaged = bytearray(payload)
        damaged[len(damaged) // 2] ^= 0xFF
        conn.execute("UPDATE records SET payload = ? WHERE seq = ?", (bytes(damaged), seq))
    result = lc("audit", "--store", store, "--thread", "t", "--json")
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    last = len(json_lines(lc("audit", "--store", store, "--thread", "t", "--json").stdout)) + 1
    assert [r["seq"] for r in json_lines(result.stdout)] == [s for s in range(1, last + 1) if s != seq]  # the rest
    assert line.startswith(f"livecontext: error: thread 't': the record at seq {seq} is corrupt (undecodable row: "
                           "the compressed payload does not decompress (zlib: "), line
    assert line.endswith(f"restore the store from a backup, or fork the thread at seq {seq - 1} (`livecontext fork "
                         f"--thread t --at {seq - 1} --new-thread NEW`) to go on without it"), line


def test_render_prints_the_chat_messages_within_the_budget(store: str) -> None:
    big = ok_json("render", "--store", store, "--thread", "t", "--budget", "8000")
    roles = [m["role"] for m in big["messages"]]
    assert roles[:2] == ["system", "user"] and roles.count("tool") == EDITS
    assert 0 < big["tokens"] <= 8000 and big["budget"] == 8000
    assert [t["name"] for t in big["tools"]] == ["notebook_replace", "notebook_replace_span",
                                                 "task_complete", "task_abandon", "output", "wait_user_response"]
    assert [e["level"] for e in big["entries"]][0] in ("recent", "live")  # the task, pinned (whole: the first call's)
    small = ok_json("render", "--store", store, "--thread", "t", "--budget", "810")  # (the tools take 646)
    assert small["tokens"] <= 810 and len(small["messages"]) < len(big["messages"])
    assert "omitted" in [e["level"] for e in small["entries"]]
    calls = {c["id"] for m in small["messages"] for c in m.get("tool_calls", ())}
    answered = {m["tool_call_id"] for m in small["messages"] if m["role"] == "tool"}
    assert calls == answered  # a call and its result come together or not at all
    assert "too small" in one_line_error(lc("render", "--store", store, "--thread", "t", "--budget", "3"))


def test_a_fork_has_its_sources_state_at_the_seq_and_then_runs_on_its_own(store: str, tmp_path: Path) -> None:
    records = audit(store)
    outputs = [r["seq"] for r in records if "ModelOutputEntry" in r["summary"]]
    at = outputs[1]  # the second edit asked for, not yet run
    forked = ok_json("fork", "--store", store, "--thread", "t", "--at", str(at), "--new-thread", "u")
    assert forked == {"thread": "u", "forked_from": "t", "at": at, "seq": at}
    assert ok_json("state", "--store", store, "--thread", "u", "--json") == ok_json(
        "state", "--store", store, "--thread", "t", "--json", "--at", str(at))
    assert ok_json("history", "--store", store, "--thread", "u", "--json")["entries"] == ok_json(
        "history", "--store", store, "--thread", "t", "--json", "--at", str(at))["entries"]
    source_before = ok_json("history", "--store", store, "--thread", "t", "--json")
    turns = notebook_turns(EDITS)
    turns[-1]["text"] = "done in the fork"
    script = write_script(tmp_path / "fork.json", turns)
    ran = lc("run", "--model", f"scripted:{script}", "--store", store, "--thread", "u", "--input", "go", "--json")
    assert ran.exit_code == 0, ran.stderr
    assert "in the middle of a step" in ran.stderr  # resumed, the input held back
    summary = json.loads(ran.stdout)
    assert summary["entries"][-1]["levels"]["live"] == "done in the fork"
    assert summary["apps"] == {"notebook": "line 0\nline 1\nline 2"}
    assert ok_json("history", "--store", store, "--thread", "t", "--json") == source_before


def test_as_of_reads_agree_with_a_fold_from_the_start_when_snapshots_exist(backend: str, tmp_path: Path) -> None:
    url = url_for(backend, tmp_path / "s")

    async def build() -> None:
        model = ScriptedModel.from_turns(notebook_turns(EDITS))
        settings = AgentSettings(thread_id="t", snapshot_every=4)
        async with open_session(url, settings, "scripted", inputs=("go",), model=model) as session:
            await run_until_idle(session, None)

    trio.run(build)
    records = audit(url)
    ok_json("fork", "--store", url, "--thread", "t", "--at", "0", "--new-thread", "empty")
    for at in range(1, len(records) + 1):
        with_snapshots = ok_json("state", "--store", url, "--thread", "t", "--json", "--at", str(at))
        ok_json("fork", "--store", url, "--thread", "t", "--at", str(at), "--new-thread", f"at{at}")
        assert ok_json("state", "--store", url, "--thread", f"at{at}", "--json") == with_snapshots
        history = ok_json("history", "--store", url, "--thread", "t", "--json", "--at", str(at))
        assert ok_json("history", "--store", url, "--thread", f"at{at}", "--json")["entries"] == history["entries"]
    assert ok_json("state", "--store", url, "--thread", "empty", "--json")["seq"] == 0


@pytest.mark.parametrize("args", [
    ("history", "--thread", "nope"),
    ("state", "--thread", "nope"),
    ("audit", "--thread", "nope"),
    ("render", "--thread", "nope"),
    ("fork", "--thread", "nope", "--at", "1", "--new-thread", "v"),
    ("history", "--thread", "t", "--at", "999"),
    ("state", "--thread", "t", "--at", "999"),
    ("fork", "--thread", "t", "--at", "999", "--new-thread", "v"),
    ("fork", "--thread", "t", "--at", "1", "--new-thread", "t"),
], ids=lambda a: " ".join(a))
def test_a_bad_thread_or_seq_is_a_one_line_error_and_writes_nothing(
        store: str, tmp_path: Path, args: tuple[str, ...]) -> None:
    before_threads = lc("threads", "--store", store, "--json").stdout
    before = files(tmp_path / "s")
    line = one_line_error(lc(*args, "--store", store))
    assert ("nope" in line) or ("999" in line) or ("already exists" in line)
    assert files(tmp_path / "s") == before
    assert lc("threads", "--store", store, "--json").stdout == before_threads


def test_a_store_url_of_an_unknown_scheme_is_a_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for args in (("threads",), ("state", "--thread", "t"), ("run", "--thread", "t", "--input", "hi")):
        line = one_line_error(lc(*args, "--store", "postgresx:db"))
        assert "unknown store URL scheme 'postgresx'" in line
    assert list(tmp_path.iterdir()) == []


def test_a_store_path_that_cannot_be_written_is_a_one_line_error_and_creates_nothing(
        backend: str, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    url = url_for(backend, blocker / "sub")
    line = one_line_error(lc("run", "--store", url, "--thread", "t", "--input", "hi"))
    assert "cannot open the store" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
    assert blocker.read_text() == "not a directory"


def test_looking_into_a_store_that_does_not_exist_is_a_one_line_error_and_creates_nothing(
        backend: str, tmp_path: Path) -> None:
    url = url_for(backend, tmp_path / "missing")
    for args in (("threads",), ("state", "--thread", "t"), ("audit", "--thread", "t")):
        assert "no store at" in one_line_error(lc(*args, "--store", url))
    assert list(tmp_path.iterdir()) == []


def test_a_bad_model_is_a_one_line_error_and_creates_no_store(backend: str, tmp_path: Path) -> None:
    url = url_for(backend, tmp_path / "s")
    line = one_line_error(lc("run", "--model", f"scripted:{tmp_path / 'none.json'}", "--store", url,
                             "--thread", "t", "--input", "hi"))
    assert "none.json" in line
    assert list(tmp_path.iterdir()) == []


async def test_a_second_run_on_a_thread_being_run_fails_naming_the_holder(backend: str, tmp_path: Path) -> None:
    url = url_for(backend, tmp_path / "s")
    slow = write_script(tmp_path / "slow.json", [{"text": "thinking slowly", "delay_s": 60}])
    quick = write_script(tmp_path / "quick.json", [{"text": "thinking quickly"}])
    events = tmp_path / "events.jsonl"
    holder = await trio.lowlevel.open_process(
        [*LIVECONTEXT, "run", "--model", f"scripted:{slow}", "--store", url, "--thread", "t",
         "--input", "go", "--json", "--events", str(events)], env=cli_env())
    try:
        while holder.poll() is None and not (events.exists() and events.stat().st_size > 0):
            await trio.sleep(0.02)
        assert holder.poll() is None
        second = await run_cli("run", "--model", f"scripted:{quick}", "--store", url, "--thread", "t",
                               "--input", "go", "--json")
        assert second.returncode != 0 and second.stdout == ""
        [line] = second.stderr.splitlines()
        assert line.startswith("livecontext: error: thread 't' is being run by another writer: ")
        assert f"'history/t' (pid {holder.pid} on {socket.gethostname()})" in line
        reading = await run_cli("state", "--store", url, "--thread", "t", "--json")
        assert reading.returncode == 0 and json.loads(reading.stdout)["state"] == "PendingInput"
    finally:
        if holder.poll() is None:
            holder.send_signal(signal.SIGKILL)
        await holder.wait()
    after = await run_cli("run", "--model", f"scripted:{quick}", "--store", url, "--thread", "t",
                          "--input", "go", "--json")  # the holder died: its lock with it
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["entries"][-1]["levels"]["live"] == "thinking quickly"
    assert os.path.exists(events)
