"""``--live``: a panel per agent that follows a run on a terminal, plain lines elsewhere.

The terminal runs use a real pseudo-terminal (stdlib ``pty``) as the command's stdin, stdout
and stderr, so that the command sees a terminal as a person's shell gives it; the screen's
bytes are read back and split into the frames drawn. The commands all start together (a
module fixture), because each spends most of its time importing.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from attrs import frozen
from rich.console import Console

from livecontext.actors.agent._agent import AgentActors, AgentSettings
from livecontext.actors.agent._session import open_session, run_until_idle
from livecontext.actors.system import open_system
from livecontext.actors.cli._live import open_live_view
from livecontext.actors.cli._live_gauge import Gauge, Watched
from livecontext.actors.cli._live_panel import frame
from livecontext.protocol import ActorId
from livecontext.runtime import ActorRef

ROOT = Path(__file__).resolve().parents[3]
LIVECONTEXT = Path(sys.executable).with_name("livecontext")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")

SLOW_SCRIPT = {"turns": [
    {"text": "Writing the plan.", "delay_s": 0.3,
     "tool_calls": [{"name": "notebook_replace", "arguments": {"old_text": "", "new_text": "- a"}}]},
    {"text": "One more item.", "delay_s": 0.3,
     "tool_calls": [{"name": "notebook_replace", "arguments": {"old_text": "- a", "new_text": "- a\n- b"}}]},
    {"text": "And a third.", "delay_s": 0.3,
     "tool_calls": [{"name": "notebook_replace", "arguments": {"old_text": "- b", "new_text": "- b\n- c"}}]},
    {"text": "Done.", "delay_s": 0.3,
     "tool_calls": [{"name": "task_complete", "arguments": {"result": "three items"}}]},
]}
"""Thirteen steps in about 1.2 s: long enough for several frames at the view's few a second."""


@frozen
class Ran:
    code: int
    out: str


@frozen
class Panel:
    """One agent's panel in one frame, as the screen showed it."""

    agent: str
    state: str
    step: int
    footer: str
    """``running``, or ``ended: ...``."""


def _env() -> dict[str, str]:
    env = {**os.environ, "TERM": "xterm-256color"}
    for name in ("LIVECONTEXT_STORE", "NO_COLOR", "COLUMNS", "LINES"):
        env.pop(name, None)
    return env


class Pty:
    """A command running on a pseudo-terminal of 120 columns by 60 lines."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 120, 0, 0))
        self.proc = subprocess.Popen([str(LIVECONTEXT), *args], stdin=slave, stdout=slave, stderr=slave,
                                     env=_env(), cwd=cwd, start_new_session=True)
        os.close(slave)
        self.screen = b""
        self.seen = 0
        """Where the last token found ends (what :meth:`read_until` looks after)."""

    def read_until(self, token: bytes, timeout: float = 60.0) -> bool:
        """Read the screen until ``token`` shows after the last one found (or the end)."""
        deadline = time.monotonic() + timeout
        while (found := self.screen.find(token, self.seen)) < 0 and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if not ready:
                if self.proc.poll() is not None:
                    return False
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # (the command ended and closed the terminal)
                return False
            if not chunk:
                return False
            self.screen += chunk
        if found < 0:
            return False
        self.seen = found + len(token)
        return True

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def finish(self) -> Ran:
        self.read_until(b"\x00never\x00")
        code = self.proc.wait(timeout=60)
        os.close(self.master)
        return Ran(code, self.screen.decode("utf-8", errors="replace"))


def _plain(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([str(LIVECONTEXT), *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=_env(), cwd=cwd)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Ran]]:
    tmp = tmp_path_factory.mktemp("live")
    (tmp / "slow.json").write_text(json.dumps(SLOW_SCRIPT))
    slow = ["run", "--store", "memory:", "--model", "scripted:slow.json", "--input", "plan it", "--live"]
    team = ["run", str(ROOT / "examples" / "team.toml"), "--store", "memory:", "--live"]
    offline = ["run", str(ROOT / "examples" / "offline.toml"), "--store", "memory:", "--live"]
    ptys = {"slow": Pty([*slow, "--max-steps", "40"], tmp), "team": Pty(team, tmp)}
    plain = {"plain-offline": _plain(offline, tmp), "plain-team": _plain(team, tmp)}
    results = {name: p.finish() for name, p in ptys.items()}
    for name, proc in plain.items():
        out, _ = proc.communicate(timeout=60)
        results[name] = Ran(proc.returncode, out)
    yield results


def panels(screen: str) -> list[Panel]:
    """Every agent panel drawn on ``screen``, in the order drawn."""
    text = ANSI.sub("", screen)
    found = []
    for match in re.finditer(r"╭─ (\S+)[^\n]*\n(.*?)╰─+ ([^─\n]+?) ─╯", text, re.S):
        state = re.search(r"│ state\s+(\w+)\s+step (\d+)", match.group(2))
        assert state is not None, match.group(0)
        found.append(Panel(match.group(1), state.group(1), int(state.group(2)), match.group(3).strip()))
    return found


def test_run_live_on_a_terminal_redraws_its_panel_as_the_agent_moves_and_ends_on_where_it_stopped(
        ran: dict[str, Ran]) -> None:
    run = ran["slow"]
    assert run.code == 0, run.out
    drawn = panels(run.out)
    while_running = {(p.state, p.step) for p in drawn if p.footer == "running"}
    assert len(while_running) >= 3, drawn  # the panel followed the agent through its steps
    assert "\x1b[" in run.out  # drawn in place, with the terminal's own codes
    last = drawn[-1]
    assert (last.state, last.step) == ("WaitingInput", 13)
    assert last.footer == "ended: WaitingInput, completed: three items (no_input)"
    final = ANSI.sub("", run.out).rpartition("╭─ main")[2]
    assert re.search(r"progress\s+\S+ 13/40 steps", final)  # against --max-steps
    assert re.search(r"context\s+\S+ [\d,]+ / 8,000 tokens\s+·\s+4 model call\(s\)", final)
    assert re.search(r"mailboxes engine 0  history 0  apps 0  input 0", final)
    assert "thread main is WaitingInput after 13 steps (no_input)" in ANSI.sub("", run.out)


def test_a_system_run_live_draws_one_panel_per_agent(ran: dict[str, Ran]) -> None:
    run = ran["team"]
    assert run.code == 0, run.out
    final = {p.agent: p for p in panels(run.out) if p.footer.startswith("ended")}
    assert set(final) == {"planner", "researcher", "critic"}
    assert final["planner"].step == 14 and final["planner"].footer == "ended: WaitingInput, waiting_user (no_input)"
    assert final["researcher"].step == 2  # asked once by the planner: its input and its answer
    text = ANSI.sub("", run.out)
    assert re.search(r"progress\s+\S+ 14/30 steps", text)  # the planner's max_steps
    assert "last: app/team.planner: planner asks:" in text  # the question, as a notification


def test_run_live_without_a_terminal_writes_a_plain_line_per_change_naming_the_agent(ran: dict[str, Ran]) -> None:
    run = ran["plain-offline"]
    assert run.code == 0, run.out
    assert "\x1b" not in run.out
    lines = run.out.splitlines()
    assert lines[0] == "lake-trip  WaitingInput -> PendingInput (step 1)"
    assert all(line.startswith("lake-trip  ") for line in lines[:-1]), run.out
    said = [line.removeprefix("lake-trip  ") for line in lines]
    assert any(re.fullmatch(r"recap folded \(\d fold\(s\)\); \d+ entries, \d+ tokens left unfolded", s) for s in said)
    assert any(s.startswith("notification n1 from analyzer/lake-trip.usage: your history is at its hard limit")
               for s in said)
    assert "history at its soft limit: 5 entries, 241 tokens" in said
    assert said[-2] == "ended WaitingInput, waiting_user after 24 steps (no_input)"
    assert lines[-1] == "thread lake-trip is WaitingInput after 24 steps (no_input); store memory:"
    transitions = [s for s in said if " -> " in s]
    assert [int(s.rpartition("step ")[2].rstrip(")")) for s in transitions] == sorted(
        int(s.rpartition("step ")[2].rstrip(")")) for s in transitions)


def test_a_system_run_live_without_a_terminal_names_each_agent_on_its_lines(ran: dict[str, Ran]) -> None:
    run = ran["plain-team"]
    assert run.code == 0, run.out
    assert "\x1b" not in run.out
    lines = run.out.splitlines()
    assert "planner     WaitingInput -> PendingInput (step 1)" in lines
    assert "researcher  WaitingInput -> PendingInput (step 1)" in lines
    assert "critic      ended WaitingInput, waiting_user after 2 steps" in lines
    # the planner asks the researcher before it takes its tool step's result
    assert lines.index("researcher  PendingInput -> WaitingInput (step 2)") < lines.index(
        "planner     WaitingToolResults -> ToolResultsReady (step 3)")


def test_chat_live_on_a_terminal_follows_each_turn_and_leaves_its_final_panel(tmp_path: Path) -> None:
    (tmp_path / "slow.json").write_text(json.dumps(SLOW_SCRIPT))
    chat = Pty(["chat", "--store", "memory:", "--model", "scripted:slow.json", "--live"], tmp_path)
    assert chat.read_until(b"> "), chat.screen
    chat.type("plan it\n")
    assert chat.read_until(b"ended:"), chat.screen
    assert chat.read_until(b"> "), chat.screen  # the next prompt, after the final panel
    chat.type("\n")
    run = chat.finish()
    assert run.code == 0, run.out
    drawn = panels(run.out)
    assert len({(p.state, p.step) for p in drawn if p.footer == "running"}) >= 3, drawn
    assert drawn[-1].footer == "ended: WaitingInput, completed: three items (no_input)"
    text = ANSI.sub("", run.out)
    assert "model: Writing the plan." in text  # each answer whole, above the panel
    assert text.index("model: Writing the plan.") < text.index("model: Done.") < text.rindex("ended:")


def test_chat_live_without_a_terminal_writes_the_answers_among_the_plain_lines(tmp_path: Path) -> None:
    proc = subprocess.run([str(LIVECONTEXT), "chat", "--store", "memory:", "--live"], input="hello there\n",
                          capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout
    assert proc.stdout.splitlines()[1:] == [
        "chat  WaitingInput -> PendingInput (step 1)",
        "chat  model: echo: hello there",
        "chat  PendingInput -> WaitingInput (step 2)",
        "chat  ended WaitingInput, waiting_user after 2 steps (no_input)",
    ]


class StuckTerminal:
    """A terminal that stops taking output when told (a frozen ssh session, a paused tmux)."""

    def __init__(self) -> None:
        self.stuck_until: float | None = None
        self.unstuck = threading.Event()

    def stick(self, seconds: float) -> None:
        """Take no output for ``seconds`` from now, or until :attr:`unstuck` is set."""
        self.stuck_until = time.monotonic() + seconds

    def write(self, text: str) -> int:
        if self.stuck_until is not None:
            self.unstuck.wait(max(self.stuck_until - time.monotonic(), 0))
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


async def test_a_stuck_terminal_drops_frames_and_never_holds_the_agents_back(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{**turn, "delay_s": 0.05} for turn in SLOW_SCRIPT["turns"]]}))
    terminal = StuckTerminal()
    console = Console(file=terminal, force_terminal=True, width=100)  # type: ignore[arg-type]
    async with open_session("memory:", AgentSettings("t"), f"scripted:{script}", inputs=["plan it"]) as session:
        async with open_live_view(session.rt, [Watched("t", session.agent, 8000)], console, hz=50) as view:
            terminal.stick(10)  # from the first frame the view's timer draws
            with trio.fail_after(10):
                idle = await run_until_idle(session, None)
            assert view.dropped > 0 and view.frames == 0  # one frame in flight all along, the rest dropped
            terminal.unstuck.set()
        assert view.frames == 1
        gauge = view.gauges["t"]
        assert (gauge.steps, gauge.inputs_taken, gauge.model_calls, gauge.tool_calls) == (idle.steps, 1, 4, 4)
        assert gauge.ended == "WaitingInput, completed: three items"


async def test_lines_keep_the_order_the_agents_did_things_in_across_agents_and_topics() -> None:
    out = io.StringIO()
    async with open_system(ROOT / "examples" / "team.toml", store="memory:") as system:
        watched = [Watched(a.name, a.actors, 8000) for a in system.agents.values()]
        # one tick in an hour: every event is taken at the end, in one batch
        async with open_live_view(system.runtime, watched, Console(file=out), hz=1 / 3600) as view:
            await system.run_inputs()
    assert not view.terminal
    lines = out.getvalue().splitlines()
    asked = lines.index("researcher  notification n1 from app/team.planner: planner asks: What should three days "
                        "in Lisbon include? Three points.")
    assert lines.index("planner     PendingInput -> WaitingToolResults (step 2)") < asked
    assert asked < lines.index("researcher  WaitingInput -> PendingInput (step 1)")
    assert lines.index("researcher  PendingInput -> WaitingInput (step 2)") < lines.index(
        "planner     WaitingToolResults -> ToolResultsReady (step 3)")


def test_agents_whose_boxes_would_not_fit_the_screen_get_a_line_each() -> None:
    actors = AgentActors("t", *(ActorRef(ActorId(kind, "t"), None) for kind in ("engine", "history", "app", "input")))  # type: ignore[arg-type]
    gauges = [Gauge(Watched(f"agent{i}", actors, 8000), steps=i, budget=8000) for i in range(12)]

    def shown(height: int) -> list[str]:
        out = io.StringIO()
        Console(file=out, width=100, height=height).print(frame(gauges))
        return out.getvalue().splitlines()

    boxes = shown(100)  # 12 boxes of 7 lines fit 100 lines
    assert len(boxes) == 12 * 7 and boxes[0].startswith("╭─ agent0 (thread t) ")
    lines = shown(40)
    assert len(lines) == 12
    assert lines[3].startswith("agent3  WaitingInput  step 3  0/8,000 tokens  history ?  0 fold(s)")
    assert all(len(line) == 100 for line in lines)
