"""The chat screen (issue 16, finding 7), on a real terminal (a pty) and on a pipe: the ``> ``
prompt comes after the answer, text typed while an answer streams waits for the next prompt
instead of mixing into the answer, a resumed chat shows its last exchanges, and a line that
is not UTF-8 is reported, not dropped (finding 4)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

from tests.support.command import LIVECONTEXT, cli_env

_ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


class Screen:
    """``livecontext chat`` on a pty: type into it, read what it shows."""

    def __init__(self, *args: str) -> None:
        self._master, slave = pty.openpty()
        self.proc = subprocess.Popen([*LIVECONTEXT, "chat", *args], stdin=slave, stdout=slave, stderr=slave,
                                     env={**cli_env(), "COLUMNS": "200", "TERM": "dumb"}, close_fds=True)
        os.close(slave)
        self.text = ""

    def type(self, keys: str) -> None:
        os.write(self._master, keys.encode())

    def wait_for(self, pattern: str, timeout: float = 20.0) -> None:
        """Read until the screen's text matches ``pattern``."""
        end = time.monotonic() + timeout
        while not re.search(pattern, self.text, re.S):
            assert time.monotonic() < end, f"{pattern!r} never showed:\n{self.text}"
            ready, _, _ = select.select([self._master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(self._master, 4096)
                except OSError:  # the process ended
                    chunk = b""
                self.text += _ANSI.sub("", chunk.decode(errors="replace")).replace("\r", "")

    def close(self) -> int:
        code = self.proc.wait(timeout=20)
        os.close(self._master)
        return code


def _script(tmp_path: Path, *turns: dict[str, object]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"scripted:{path}"


def test_the_prompt_follows_the_answer_and_text_typed_meanwhile_waits_for_it(tmp_path: Path) -> None:
    model = _script(tmp_path, {"text": "the first answer", "delay_s": 1.5}, {"text": "the second answer"})
    url = f"sqlite:{tmp_path / 'x.db'}"
    screen = Screen("--store", url, "--model", model)
    screen.wait_for(r"is queued\n> $")
    screen.type("hello\r")
    screen.wait_for(r"model call #0")
    time.sleep(0.3)
    screen.type("typed ahead")  # while the model thinks and answers
    screen.wait_for(r"the first answer\n> typed ahead$")
    answer = screen.text[screen.text.index("> hello"):screen.text.index("the first answer")]
    assert "typed ahead" not in answer and "> " not in answer[2:]
    screen.type(" and sent\r")
    screen.wait_for(r"the second answer\n> $")
    screen.type("\x04")  # Ctrl-D ends
    assert screen.close() == 0

    resumed = subprocess.run([*LIVECONTEXT, "chat", "--store", url], input="", capture_output=True, text=True,
                             env={**cli_env(), "COLUMNS": "200"}, timeout=60, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert f"chatting on thread chat with {model}" in resumed.stdout  # (its own model, not echo)
    shown = resumed.stdout[resumed.stdout.index("the conversation so far"):]
    assert shown.splitlines()[1:5] == ["you: hello", "model: the first answer", "you: typed ahead and sent",
                                       "model: the second answer"]


def test_a_piped_line_that_is_not_utf8_is_reported_and_the_others_answered(tmp_path: Path) -> None:
    done = subprocess.run([*LIVECONTEXT, "chat", "--store", "memory:"], input=b"hello\nbad \xff\xfe\nworld\n",
                          capture_output=True, env={**cli_env(), "COLUMNS": "200"}, timeout=60, check=False)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 1
    assert "model: echo: hello" in out and "model: echo: world" in out
    assert err.splitlines() == [
        "livecontext: error: the input 'bad \\xff\\xfe' is not valid UTF-8 (at character 4); give it as UTF-8 "
        "text (check the encoding of your terminal or file); nothing was written"]


def test_a_piped_task_larger_than_the_budget_is_refused_in_one_line_and_the_next_line_is_the_task() -> None:
    lines = ("word " * 900) + "\nshort task\n"
    done = subprocess.run([*LIVECONTEXT, "chat", "--store", "memory:", "--budget", "1000"], input=lines.encode(),
                          capture_output=True, env={**cli_env(), "COLUMNS": "200"}, timeout=60, check=False)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 1
    assert out.count("model: echo:") == 1 and "word word" not in out  # the second line alone was answered
    assert err.splitlines() == [
        "livecontext: error: the pinned input is 905 tokens, more than the 324 a model call has room for "
        "(budget 1,000 minus 676 for the system prompt and the tools); nothing was recorded; shorten it, raise "
        "the budget, or have it sent cut to its head and tail (--cut-oversized; in Python cut_oversized=True)"]


def test_a_piped_task_larger_than_the_budget_is_sent_cut_with_cut_oversized() -> None:
    done = subprocess.run([*LIVECONTEXT, "chat", "--store", "memory:", "--budget", "1000", "--cut-oversized"],
                          input=(("word " * 900) + "\n").encode(), capture_output=True,
                          env={**cli_env(), "COLUMNS": "200"}, timeout=60, check=False)
    out = done.stdout.decode()
    assert done.returncode == 0 and done.stderr.decode() == ""
    assert out.count("model: echo:") == 1  # taken and answered (what it was sent: test_cli_oversized.py)


def test_on_a_terminal_a_line_ended_while_the_model_thinks_interrupts_it(tmp_path: Path) -> None:
    # the call's first attempt takes an hour; made again after the cut, it answers at once
    model = _script(tmp_path, {"text": "the short answer", "delay_s": 3600, "delay_times": 1})
    screen = Screen("--store", f"sqlite:{tmp_path / 'x.db'}", "--model", model)
    screen.wait_for(r"is queued\n> $")
    screen.type("a long question\r")
    screen.wait_for(r"model call #0")
    screen.type("make it short\r")
    screen.wait_for(r"the short answer\n> $")
    assert "you (interrupting): make it short" in screen.text
    assert "model call interrupted by client/console" in screen.text
    screen.type("\x04")
    assert screen.close() == 0
