"""The chat while the agent works, through a pipe: a line ended with Enter interrupts it, a
line starting with ``+`` is queued; ``chat --help`` and the opening line say so."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path

from click.testing import CliRunner

from livecontext.actors.cli import main
from tests.support.command import LIVECONTEXT, cli_env

HOUR = 3600


class Piped:
    """``livecontext chat`` with a pipe for its input: write lines, read what it prints."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([*LIVECONTEXT, "chat", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env={**cli_env(), "COLUMNS": "200",
                                                                    "PYTHONUNBUFFERED": "1"})
        self.text = ""

    def write(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode())
        self.proc.stdin.flush()

    def wait_for(self, needle: str, timeout: float = 30.0) -> None:
        """Read until ``needle`` was printed (the timeout only ends a test that broke)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        end = time.monotonic() + timeout
        while needle not in self.text:
            assert time.monotonic() < end, f"{needle!r} never showed:\n{self.text}"
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                self.text += os.read(fd, 65536).decode(errors="replace")

    def end(self) -> int:
        rest, _ = self.proc.communicate(timeout=30)  # (closes the input: the chat ends)
        self.text += rest.decode(errors="replace")
        return self.proc.returncode


def _script(tmp_path: Path, *turns: dict[str, object]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"scripted:{path}"


def _audit(url: str) -> list[dict[str, object]]:
    done = subprocess.run([*LIVECONTEXT, "audit", "--store", url, "--thread", "chat", "--json"], capture_output=True,
                          text=True, env=cli_env(), timeout=60, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_line_sent_while_the_model_thinks_interrupts_it_and_is_its_next_input(tmp_path: Path) -> None:
    # the first attempt of the call takes an hour; the one made again after the cut answers at once
    model = _script(tmp_path, {"text": "the new answer", "delay_s": HOUR, "delay_times": 1})
    url = f"sqlite:{tmp_path / 'x.db'}"
    chat = Piped("--store", url, "--model", model)
    chat.write("write a long essay\n")
    chat.wait_for("model call #0")  # the model works (for an hour, unless cut)
    chat.write("just a haiku\n")
    chat.wait_for("the new answer")
    assert chat.end() == 0
    assert "you (interrupting): just a haiku" in chat.text
    assert "model call interrupted by client/console" in chat.text
    assert chat.text.count("model: the new answer") == 1
    records = _audit(url)
    (cut,) = [r for r in records if r["kind"] == "StepInterrupted"]
    assert cut["summary"] == "model call interrupted by client/console"
    inputs = [r["summary"] for r in records if r["kind"] == "EntryAppended" and "ModelInputEntry" in str(r["summary"])]
    assert len(inputs) == 2 and "just a haiku" in inputs[1]


def test_a_line_starting_with_plus_is_queued_and_answered_after_the_work_in_progress(tmp_path: Path) -> None:
    model = _script(tmp_path, {"text": "the first answer", "delay_s": 2}, {"text": "the second answer"})
    url = f"sqlite:{tmp_path / 'x.db'}"
    chat = Piped("--store", url, "--model", model)
    chat.write("first\n")
    chat.wait_for("model call #0")
    chat.write("+ and then this\n")
    chat.wait_for("the second answer")
    assert chat.end() == 0
    assert "you (queued): and then this" in chat.text
    assert chat.text.index("the first answer") < chat.text.index("the second answer")
    assert "interrupted" not in chat.text
    assert not [r for r in _audit(url) if r["kind"] == "StepInterrupted"]


def test_lines_piped_before_the_turn_began_are_answered_one_by_one(tmp_path: Path) -> None:
    model = _script(tmp_path, {"text": "one", "delay_s": 0.5}, {"text": "two"})
    done = subprocess.run([*LIVECONTEXT, "chat", "--store", "memory:", "--model", model], input="a\nb\n",
                          capture_output=True, text=True, env={**cli_env(), "COLUMNS": "200"}, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "model: one" in done.stdout and "model: two" in done.stdout
    assert "you (" not in done.stdout and "interrupted" not in done.stdout


def test_chat_help_says_how_to_interrupt_and_how_to_queue() -> None:
    out = " ".join(CliRunner().invoke(main, ["chat", "--help"]).output.split())
    assert "Enter interrupts it" in out and "starts with + is queued" in out
