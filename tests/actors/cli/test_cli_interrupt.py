"""Ctrl-C in ``run`` and ``chat`` (issue 16, finding 1): the command stops within its deadline,
says in one line where the thread is and how to resume it, exits 130, and leaves a log that
resumes; an input it had accepted is either recorded or said not to be.

Real processes, a real SIGINT.
"""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.command import LIVECONTEXT, cli_env, json_lines

SLOW = {"text": "thinking slowly", "delay_s": 60}
DEADLINE_S = 5.0


def _start(*args: str, stdin: int | None = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*LIVECONTEXT, *args], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**cli_env(), "COLUMNS": "200"})


def _wait_for(path: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Wait until ``path`` holds ``text`` (the process got that far)."""
    end = time.monotonic() + timeout
    while not (path.exists() and text in path.read_text()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, f"{text!r} never came"
        time.sleep(0.05)


def _interrupt(proc: subprocess.Popen[bytes]) -> tuple[int, str, str, float]:
    """Ctrl-C; how the process ended, and how long it took.

    Its input stays open until it has ended, as a terminal's does (an input that ends is a
    chat's end: closing it with the Ctrl-C would race it)."""
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # (a deadlock guard: say how the process took signals)
        status = Path(f"/proc/{proc.pid}/status").read_text()
        proc.kill()
        raise AssertionError("the command did not end on Ctrl-C; its signals: " + "; ".join(
            line for line in status.splitlines() if line.startswith("Sig"))) from None
    took = time.monotonic() - start
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return code, out, err, took


def _lc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LIVECONTEXT, *args], capture_output=True, text=True, env=cli_env(), timeout=60,
                          check=False)


def test_ctrl_c_in_run_stops_the_step_says_where_the_thread_is_and_it_resumes(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [SLOW]}))
    url = f"sqlite:{tmp_path / 'x.db'}"
    events = tmp_path / "events.jsonl"
    proc = _start("run", "--store", url, "--model", f"scripted:{script}", "--input", "first", "--input", "second",
                  "--events", str(events))
    _wait_for(events, "BeforeModelCall", proc)
    code, _, err, _ = _interrupt(proc)
    assert code == 130
    assert err.splitlines() == [
        "livecontext: note: the input 'second' was not recorded (the run stopped before taking it): give it again",
        f"livecontext: interrupted; thread main is at PendingInput, `livecontext run --thread main --store {url}` "
        "resumes it"]
    state = json.loads(_lc("state", "--store", url, "--thread", "main", "--json").stdout)
    assert (state["state"], state["status"]) == ("PendingInput", "paused")
    assert json_lines(_lc("audit", "--store", url, "--thread", "main", "--json").stdout)[-1]["kind"] == "EnginePaused"
    script.write_text(json.dumps({"turns": [{"text": "answered"}, {"text": "and the second"}]}))
    resumed = _lc("run", "--store", url, "--thread", "main", "--json")  # as the line said
    assert resumed.returncode == 0, resumed.stderr
    assert [e["levels"]["live"] for e in json.loads(resumed.stdout)["entries"]] == ["first", "answered"]
    again = _lc("run", "--store", url, "--thread", "main", "--input", "second", "--json")  # as the note said
    texts = [e["levels"]["live"] for e in json.loads(again.stdout)["entries"]]
    assert texts == ["first", "answered", "second", "and the second"]


def test_ctrl_c_in_chat_while_a_reply_streams_and_at_the_prompt(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "quick"}, SLOW]}))
    url = f"sqlite:{tmp_path / 'x.db'}"
    proc = _start("chat", "--store", url, "--model", f"scripted:{script}", stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(b"one\n")
    proc.stdin.flush()
    while '"quick"' not in _lc("history", "--store", url, "--thread", "chat", "--json").stdout:
        assert proc.poll() is None
        time.sleep(0.1)
    time.sleep(0.3)  # at the prompt: reading the next line
    code, out, err, _ = _interrupt(proc)
    assert code == 130, err
    assert err.splitlines() == [
        f"livecontext: interrupted; thread chat is at WaitingInput, `livecontext chat --thread chat --store {url}` "
        "resumes it"], out
    assert "model: quick" in out

    proc = _start("chat", "--store", url, "--model", f"scripted:{script}", stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(b"two\n")
    proc.stdin.flush()
    while '"two"' not in _lc("history", "--store", url, "--thread", "chat", "--json").stdout:  # taken: the model thinks
        assert proc.poll() is None
        time.sleep(0.1)
    code, out, err, _ = _interrupt(proc)
    assert code == 130, err
    assert err.splitlines()[-1] == (
        f"livecontext: interrupted; thread chat is at PendingInput, `livecontext chat --thread chat --store {url}` "
        "resumes it")
    assert "Traceback" not in err
    history = json.loads(_lc("history", "--store", url, "--thread", "chat", "--json").stdout)
    assert [e["levels"]["live"] for e in history["entries"]] == ["one", "quick", "two"]


def test_a_step_that_will_not_stop_is_ended_at_the_deadline_or_at_a_second_ctrl_c(tmp_path: Path) -> None:
    (tmp_path / "naptool.py").write_text(
        "import time\n\ndef nap(seconds: int) -> str:\n    \"\"\"Sleep (a sync tool: not cancellable).\"\"\"\n"
        "    time.sleep(seconds)\n    return 'rested'\n")
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "napping", "tool_calls": [
        {"name": "nap", "arguments": {"seconds": 60}}]}]}))
    for second_ctrl_c in (True, False):
        url = f"sqlite:{tmp_path / f'{second_ctrl_c}.db'}"
        events = tmp_path / f"{second_ctrl_c}.jsonl"
        proc = subprocess.Popen([*LIVECONTEXT, "run", "--tool", "naptool:nap", "--model", f"scripted:{script}",
                                 "--input", "go", "--store", url, "--events", str(events)], cwd=tmp_path,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=cli_env())
        _wait_for(events, "BeforeToolExecute", proc)
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        if second_ctrl_c:
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)  # (not the nap's 60 s: a deadlock guard, not a speed bound)
        took = time.monotonic() - start
        assert proc.returncode == 130
        if not second_ctrl_c:  # (a busy machine only makes it later: what is bounded is how early)
            assert took >= DEADLINE_S, took
        said = "interrupted again; thread main was stopped at once" if second_ctrl_c else (
            "interrupted; thread main did not stop within 5 s and was stopped at once")
        assert err.decode().splitlines() == [
            f"livecontext: {said} (its log is whole); `livecontext run --thread main --store {url}` resumes it"]
        state = json.loads(_lc("state", "--store", url, "--thread", "main", "--json").stdout)
        assert state["state"] == "WaitingToolResults"  # the call is recorded; resuming runs it


_STOP_AT_IMPORT = """
import signal, sys, time

# Ctrl-C as a terminal gives it. A child inherits its parent's ignored signals and signal mask,
# and Python turns SIGINT into KeyboardInterrupt only where it was not ignored: a test runner's
# worker (or a shell's background job) that ignores or blocks it must not decide this test
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])

MODULE = sys.argv[1]

class StopAt:
    \"\"\"Say when MODULE starts to be imported, then wait there for the Ctrl-C.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            sys.meta_path.remove(self)
            print("importing", name, flush=True)
            time.sleep(60)
        return None

sys.meta_path.insert(0, StopAt())
sys.argv = ["livecontext", *sys.argv[2:]]
from livecontext._command import main
main()
"""
"""The ``livecontext`` command, stopped where it starts to import a module (the first
argument) until a signal comes."""


THREADS = ["threads", "--store", "memory:"]


@pytest.mark.parametrize(("module", "args"), [
    ("click", THREADS),  # the command line itself
    ("livecontext.actors.cli._commands_store", THREADS),  # the command's module, looked up by click
    ("livecontext.actors.cli._commands_agent", ["run", "--help"]),  # the command's module, for its help
    ("livecontext.runtime.persistence", THREADS),  # what the command imports
    ("livecontext.actors.cli._interrupt", THREADS),  # the last step before the command takes Ctrl-C over
])
def test_ctrl_c_while_the_command_starts_is_one_line_and_exit_130(module: str, args: list[str]) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _STOP_AT_IMPORT, module, *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env())
    assert proc.stdout is not None
    said = proc.stdout.readline().decode()
    assert said == f"importing {module}\n", (said, proc.communicate())
    code, out, err, _ = _interrupt(proc)
    assert (code, err, out) == (130, "livecontext: interrupted\n", "")


def test_ctrl_c_in_a_system_run_says_where_each_agent_is_and_the_run_resumes(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[3] / "examples"
    shutil.copy(examples / "team.toml", tmp_path)
    shutil.copytree(examples / "team", tmp_path / "team")
    researcher = tmp_path / "team" / "researcher.json"
    quick = researcher.read_text()
    slow = json.loads(quick)
    slow["turns"][0]["delay_s"] = 60
    researcher.write_text(json.dumps(slow))
    db = tmp_path / "x.db"
    proc = subprocess.Popen([*LIVECONTEXT, "run", str(tmp_path / "team.toml"), "--store", f"sqlite:{db}"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**cli_env(), "COLUMNS": "200"})
    end = time.monotonic() + 60
    while not _researcher_asked(db):  # (the researcher is in its slow model call)
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "the researcher was never asked"
        time.sleep(0.1)
    code, _, err, _ = _interrupt(proc)
    assert code == 130, err
    assert err.splitlines()[-1] == (
        "livecontext: interrupted; system team: planner at WaitingToolResults, researcher at PendingInput, critic at "
        f"WaitingInput; `livecontext run {tmp_path / 'team.toml'} --store sqlite:{db}` resumes it")
    researcher.write_text(quick)
    resumed = _lc("run", str(tmp_path / "team.toml"), "--store", f"sqlite:{db}", "--json")  # as the line said
    assert resumed.returncode == 0, resumed.stderr
    assert "system team's last run was interrupted; this run resumed it" in resumed.stderr
    agents = {a["name"]: a for a in json.loads(resumed.stdout)["agents"]}
    assert agents["planner"]["status"] == "waiting_user" and agents["researcher"]["entries"], agents


def _researcher_asked(db: Path) -> bool:
    if not db.exists():
        return False
    try:
        with sqlite3.connect(db) as conn:
            row = conn.execute("SELECT count(*) FROM records WHERE thread_id = 'team.researcher'").fetchone()
    except sqlite3.Error:
        return False
    return bool(row[0] >= 3)
