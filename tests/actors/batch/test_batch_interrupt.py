"""Ctrl-C during ``livecontext batch``: one line saying how far the batch got and the command that
resumes it, exit 130, the results file whole; the command it names finishes the batch.

A real process, a real SIGINT, sent once the first task's result line is written.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from tests.support.command import LIVECONTEXT, cli_env

TASKS = [{"id": "quick", "inputs": ["one"]}, {"id": "slow", "inputs": ["one", "two"]}]


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def test_ctrl_c_in_a_batch_says_how_many_tasks_ended_and_the_command_that_resumes_it(tmp_path: Path) -> None:
    script = tmp_path / "s.json"  # (each task's model reads it: the second turn, the slow task's, takes a minute)
    script.write_text(json.dumps({"turns": [{"text": "first"}, {"text": "second", "delay_s": 60}]}))
    (tmp_path / "agent.toml").write_text('model = "scripted:s.json"\n')
    (tmp_path / "two.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    out = tmp_path / "two.results.jsonl"
    args = ["batch", "agent.toml", "--tasks", "two.jsonl", "--store", "sqlite:b.db"]
    proc = subprocess.Popen([*LIVECONTEXT, *args], cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=cli_env())
    while not _lines(out):  # (the quick task ended; the slow one is in its model call)
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stdout == b""
    assert stderr.decode().splitlines()[-1] == (
        "livecontext: interrupted; batch two: 1 of 2 tasks ended (1 done, 0 failed), their lines in "
        "two.results.jsonl; `livecontext batch agent.toml --tasks two.jsonl --store sqlite:b.db` resumes the others")
    assert "Traceback" not in stderr.decode()
    assert [line["id"] for line in _lines(out)] == ["quick"]

    script.write_text(json.dumps({"turns": [{"text": "first"}, {"text": "second"}]}))
    resumed = subprocess.run([*LIVECONTEXT, *args], cwd=tmp_path, capture_output=True, text=True, env=cli_env(),
                             timeout=60, check=False)  # (as the line said)
    assert resumed.returncode == 0, resumed.stderr
    assert "(1 finished before)" in resumed.stdout
    assert [(line["id"], line["status"], line["result"]) for line in _lines(out)] == [
        ("quick", "answered", "first"), ("slow", "answered", "second")]
