"""``history``, ``audit`` and ``state`` print readable text by default, JSON with ``--json``."""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import trio

from livecontext.actors import AgentSettings, spawn_agent
from livecontext.actors.apps import Notebook
from livecontext.actors.cli._readable import audit_printer, print_history, print_state, readable_console
from livecontext.protocol.agent import ProvideInput, RunUntilIdle
from livecontext.protocol.history import (
    ModelInputEntry,
    ModelOutputEntry,
    Notification,
    RecapEntry,
    Retention,
    ToolCall,
)
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.wire import make_converter
from livecontext.runtime import open_runtime
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.persistence import open_store
from tests.support.agent_harness import ProbeApp, counter

from tests.support.command import in_process

LONG = "x" * 1500
"""A label long enough that the result which repeats it is shortened."""
TURNS = [
    {"text": "Noting the milk.", "tool_calls": [
        {"name": "notebook_replace", "arguments": {"old_text": "", "new_text": "- milk"}},
        {"name": "record", "arguments": {"label": LONG}}]},
    {"text": "Noted: milk."},
]


def lc(*args: str) -> tuple[int, str, str]:
    """``livecontext ARGS`` in this process (stdout is not a terminal): code, stdout, stderr."""
    return in_process(*args, columns=None)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A thread with an input, a model output calling two tools (one result long), an answer."""
    url = f"sqlite:{tmp_path_factory.mktemp('readable') / 'r.db'}"

    async def run() -> None:
        async with await open_store(url) as opened, await opened.open_thread("t", create=True, owner="test") as log:
            async with open_runtime() as rt:
                agent = await spawn_agent(rt, log, ScriptedModel.from_turns(TURNS), AgentSettings("t", budget=6000),
                                          converter=make_converter(), counter=counter(),
                                          apps=[Notebook(), ProbeApp()])
                client = rt.client("test")
                await client.ask(agent.input, ProvideInput("Remember the milk."))
                await client.ask(agent.engine, RunUntilIdle(), timeout=30)
                await rt.aclose()

    trio.run(run)
    return url


def ok(*args: str) -> str:
    code, out, err = lc(*args)
    assert code == 0, err
    return out


def test_history_prints_each_entry_as_a_block_with_its_kind_and_text(store: str) -> None:
    out = ok("history", "--store", store, "--thread", "t")
    blocks = out.split("\n\n")
    assert blocks[0].startswith("thread t as of seq ") and blocks[0].endswith(": 4 entries")
    head = [b.splitlines()[0].split("  ")[:2] for b in blocks[1:]]
    records = [json.loads(line) for line in ok("audit", "--store", store, "--thread", "t", "--json").splitlines()]
    added = {r["summary"].split()[1].rstrip(":"): r["seq"] for r in records
             if r["kind"] in ("EntryAppended", "ToolResultsAppended")}  # ("ModelInputEntry e1: ...")
    assert head == [[f"e1 (seq {added['e1']})", "input"], [f"e2 (seq {added['e2']})", "model output"],
                    [f"e3 (seq {added['e3']})", "tool results"], [f"e4 (seq {added['e4']})", "model output"]]
    assert blocks[1].splitlines()[1] == "    Remember the milk."
    assert blocks[4].splitlines()[1] == "    Noted: milk."


def test_history_shows_a_tool_call_with_its_name_and_arguments_and_its_result_with_its_status(store: str) -> None:
    out = ok("history", "--store", store, "--thread", "t")
    assert '    → notebook_replace {"old_text": "", "new_text": "- milk"}  (call_0_0)\n' in out
    assert "    ← notebook_replace ok (call_0_0): - milk\n" in out


def test_history_shortens_a_long_result_saying_how_much_was_left_out_and_full_shows_it_whole(store: str) -> None:
    out = ok("history", "--store", store, "--thread", "t")
    result = "recorded " + LONG
    left_out = len(result) - 400
    assert f"    ← record ok (call_0_1): {result[:400]}… [{left_out:,} more chars; --full shows all]\n" in out
    assert LONG not in out
    full = ok("history", "--store", store, "--thread", "t", "--full")
    assert f"    ← record ok (call_0_1): {result}\n" in full and "more chars" not in full


def test_history_json_prints_the_thread_and_its_entries_as_one_json_object(store: str) -> None:
    data = json.loads(ok("history", "--store", store, "--thread", "t", "--json"))
    assert sorted(data) == ["entries", "seq", "thread"]
    assert [e["kind"] for e in data["entries"]] == ["model_input", "model_output", "tool_results", "model_output"]
    assert data["entries"][2]["results"][1]["content"] == "recorded " + LONG  # whole


def test_audit_prints_a_line_per_record_with_its_seq_sender_kind_and_summary(store: str) -> None:
    lines = ok("audit", "--store", store, "--thread", "t").splitlines()
    records = [json.loads(line) for line in ok("audit", "--store", store, "--thread", "t", "--json").splitlines()]
    assert len(lines) == len(records) > 5
    for line, record in zip(lines, records, strict=True):
        seq, date, time, sender, kind, summary = line.split(maxsplit=5)
        assert (int(seq), sender, kind) == (record["seq"], record["sender"], record["kind"])
        assert dt.datetime.fromisoformat(f"{date}T{time}+00:00") == dt.datetime.fromisoformat(
            record["sent_at"]).replace(microsecond=0)
        assert summary == record["summary"] or summary.endswith(" more chars]")
    long_one = next(line for line in lines if "record call_0_1 ok" in line)
    assert long_one.endswith(f"… [{len('recorded ' + LONG) - 200 + len('record call_0_1 ok: '):,} more chars]")


def test_state_prints_status_budget_steps_usage_and_apps_and_json_the_same_data(store: str) -> None:
    out = ok("state", "--store", store, "--thread", "t")
    data = json.loads(ok("state", "--store", store, "--thread", "t", "--json"))
    assert (data["budget"], data["sub_agents"], data["usage"]["model_calls"]) == (6000, [], 2)
    lines = out.splitlines()
    assert lines[0] == "thread t: waiting_user (engine WaitingInput)"
    assert f"  entries: 4; last seq {data['seq']}" in lines
    assert "  budget: 6,000 tokens" in lines
    assert any(line.startswith("  steps: 2 model calls, ") for line in lines)
    assert lines[lines.index("  apps:") + 1:] == ["    notebook: - milk", "    probe: PROBE-WINDOW"]  # (a state it does not save: its view


@pytest.mark.parametrize("command", ["history", "audit", "state"])
def test_readable_output_into_a_pipe_has_no_colour_codes(store: str, command: str) -> None:
    out = ok(command, "--store", store, "--thread", "t")
    assert out and "\x1b[" not in out


def test_readable_output_on_a_terminal_is_coloured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    tty = _Terminal()
    console = readable_console(tty)
    print_history(console, "t", 1, [_input("hello")], (), full=False)
    assert "\x1b[" in tty.getvalue() and "hello" in tty.getvalue()


def test_text_with_brackets_is_printed_as_it_is_on_a_terminal_not_read_as_markup(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    tty = _Terminal()
    state = {"state": "WaitingInput", "status": "waiting_user", "entries": 0, "pending_tool_results": 0,
             "seq": 3, "budget": None, "sub_agents": [], "apps": {"notebook": "- [x] milk [/x]"},
             "usage": {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "model_calls": 0}}
    print_state(readable_console(tty), "t", state)
    assert "    notebook: - [x] milk [/x]" in re.sub("\x1b\\[[0-9;]*m", "", tty.getvalue())


def test_state_says_which_call_an_agent_waiting_on_another_agent_waits_for() -> None:
    out = io.StringIO()
    state = {"state": "WaitingToolResults", "status": "waiting_internal", "waiting_on": "ask_agent call call_1",
             "entries": 2, "pending_tool_results": 1, "seq": 5, "budget": None, "sub_agents": [], "apps": {},
             "usage": {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "model_calls": 1}}
    print_state(readable_console(out), "t", state)
    assert out.getvalue().splitlines()[:2] == ["thread t: waiting_internal (engine WaitingToolResults)",
                                               "  waiting on: ask_agent call call_1"]


def test_history_marks_folded_entries_and_shows_observations_notes_and_recaps() -> None:
    note = Notification("n1", ActorId("app", "t"), "the build is green", _AT)
    entries = [_input("", notifications=(note,), folded=True),
               ModelOutputEntry(id="e2", revision=1, author=ActorId("engine", "t"), created_at=_AT,
                                retention=Retention.COMPRESSIBLE, content=counter().content("ok", "ok", "ok"),
                                tool_calls=(ToolCall("call_0_0", "ls", '{"path": "/tmp"}'),), folded=True),
               RecapEntry(id="e3", revision=1, author=ActorId("recap", "t"), created_at=_AT,
                          retention=Retention.CRITICAL, content=counter().content("they listed /tmp", "", ""),
                          covers=("e1", "e2"), strategy="simple_extract")]
    out = io.StringIO()
    console = readable_console(out)
    print_history(console, "t", 9, entries, (), full=False)
    blocks = out.getvalue().split("\n\n")
    assert blocks[0] == "thread t as of seq 9: 3 entries (2 folded into recaps)"
    assert blocks[1].splitlines() == [f"e1  observation  engine/t  {_AT_TEXT}  folded into a recap",
                                      "    note n1 from app/t: the build is green"]
    assert blocks[2].splitlines()[0].endswith("folded into a recap")
    assert blocks[2].splitlines()[2] == '    → ls {"path": "/tmp"}  (call_0_0)'
    assert blocks[3].splitlines() == [f"e3  recap of e1..e2 (simple_extract)  recap/t  {_AT_TEXT}  pinned",
                                      "    they listed /tmp"]


_AT = dt.datetime(2025, 3, 1, 12, 30, 5, tzinfo=dt.timezone.utc)
_AT_TEXT = "2025-03-01 12:30:05"


def _input(text: str, **fields: Any) -> ModelInputEntry:
    return ModelInputEntry(id="e1", revision=1, author=ActorId("engine", "t"), created_at=_AT,
                           retention=Retention.COMPRESSIBLE, content=counter().content(text, text, text), text=text,
                           **fields)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_audit_of_a_sub_agents_thread_names_its_parent_once_and_each_records_system_seq() -> None:
    out = io.StringIO()
    show = audit_printer(readable_console(out))
    for seq in (1, 2):
        show({"seq": seq, "system_seq": 10 + seq, "sender": "engine/p/sub/call_0_0", "sent_at": _AT.isoformat(),
              "kind": "StepFailed", "summary": "step failed:\n  two lines", "parent": "p"})
    assert out.getvalue().splitlines() == [
        "a sub-agent of thread p",
        f"    1 (system 11)  {_AT_TEXT}  engine/p/sub/call_0_0  StepFailed  step failed: two lines",
        f"    2 (system 12)  {_AT_TEXT}  engine/p/sub/call_0_0  StepFailed  step failed: two lines"]


def test_history_of_a_thread_whose_early_record_is_damaged_shows_its_entries_without_seqs_and_says_why(
        tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "done"}]}))
    url = f"sqlite:{tmp_path / 'd.db'}"
    ok("run", "--model", f"scripted:{script}", "--store", url, "--input", "go " + "x" * 3000,
       "--snapshot-every", "1", "--json")
    with sqlite3.connect(tmp_path / "d.db") as conn:  # the input's record, compressed: bit rot (the state is in a snapshot)
        seq, payload = conn.execute("SELECT seq, payload FROM records WHERE typeof(payload) = 'blob'"
                                    " ORDER BY seq LIMIT 1").fetchone()
        damaged = bytearray(payload)
        damaged[len(damaged) // 2] ^= 0xFF
        conn.execute("UPDATE records SET payload = ? WHERE seq = ?", (bytes(damaged), seq))
    code, out, err = lc("history", "--store", url, "--thread", "main")
    assert code == 0
    assert [b.splitlines()[0].split("  ")[:2] for b in out.split("\n\n")[1:]] == [["e1", "input"], ["e2", "model output"]]
    assert err.startswith(f"livecontext: warning: entries shown without their seqs: thread 'main': the record at "
                          f"seq {seq} is corrupt") and err.count("\n") == 1
