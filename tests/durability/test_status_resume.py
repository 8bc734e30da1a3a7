"""An agent's status survives a restart: reopened (from a snapshot or by replay) or killed with
SIGKILL, a thread has the status it had, and a completed one still takes no step."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from livecontext.actors.history import load_state
from livecontext.actors.history import write_snapshot
from livecontext.protocol.agent import AgentStatus, Pause
from livecontext.protocol.history import TaskStatus
from livecontext.protocol.wire import make_converter
from livecontext.runtime.models import RetryingModel, RetryPolicy, ScriptedModel
from livecontext.runtime.persistence import ThreadNotFoundError, open_store
from tests.support.agent_harness import AgentHarness, ProbeApp, ProbeModel, open_agent, scripted

from tests.support.command import LIVECONTEXT, cli_env, run_cli, write_script

ASK = {"text": "", "tool_calls": [{"name": "wait_user_response", "arguments": {"question": "Which folder?"}}]}
DONE = {"text": "", "tool_calls": [{"name": "task_complete", "arguments": {"result": "Cleaned /tmp."}}]}
ABANDON = {"text": "", "tool_calls": [{"name": "task_abandon", "arguments": {"reason": "No such folder."}}]}
RECORD = {"text": "", "tool_calls": [{"name": "record", "arguments": {"label": "a"}}]}


async def _completed(h: AgentHarness) -> None:
    await h.run_until_idle()


async def _paused(h: AgentHarness) -> None:
    model = h.model
    assert isinstance(model, ProbeModel) and model.gate is not None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(h.run_until_idle)
        await model.started.wait()
        await h.client.ask(h.agent.engine, Pause())
        model.gate.set()


def _failing() -> RetryingModel:
    script = ScriptedModel.from_turns([{"text": "finally", "fail": {"error": "server", "times": 2}}])
    return RetryingModel(script, RetryPolicy(max_attempts=2, base_delay_s=0.001, max_delay_s=0.001))


def _gated(turns: list[dict[str, Any]]) -> ProbeModel:
    model = ProbeModel(scripted(turns))
    model.gate = trio.Event()
    return model


Scenario = tuple[Callable[[], Any], Callable[[AgentHarness], Awaitable[None]], AgentStatus]
SCENARIOS: dict[str, Scenario] = {
    "completed": (lambda: scripted([DONE]), _completed, AgentStatus(TaskStatus.COMPLETED, result="Cleaned /tmp.")),
    "abandoned": (lambda: scripted([ABANDON]), _completed, AgentStatus(TaskStatus.ABANDONED, reason="No such folder.")),
    "waiting_user": (lambda: scripted([ASK]), _completed, AgentStatus(TaskStatus.WAITING_USER, question="Which folder?")),
    "paused": (lambda: _gated([RECORD, {"text": "done"}]), _paused, AgentStatus(TaskStatus.PAUSED)),
    "failed": (_failing, _completed, AgentStatus(
        TaskStatus.FAILED, error="model call failed after 2 attempts: server: scripted failure 2 of 2 for turn 0; "
                                 "the history was not changed, try again later")),
}


async def _snapshot_at_the_end(url: str) -> None:
    """Write a snapshot of the thread's whole state, so that reopening replays nothing."""
    converter = make_converter()
    async with await open_store(url) as store:
        async with await store.open_thread("t1", owner="tests") as log:
            state = await load_state(log, converter, "t1")
            await write_snapshot(log, converter, state)


@pytest.mark.parametrize("reopened", ["by replay", "from a snapshot"])
@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_a_reopened_thread_has_the_status_it_had(tmp_path: Path, name: str, reopened: str) -> None:
    url = f"sqlite:{tmp_path / 'db'}"
    make_model, reach, expected = SCENARIOS[name]
    async with open_agent(model=make_model(), inputs=["clean up"], apps=[ProbeApp()], store=url) as h:
        await reach(h)
        before = await h.status()
    assert before == expected
    if reopened == "from a snapshot":
        await _snapshot_at_the_end(url)
    idle_model = ProbeModel(scripted([]))
    async with open_agent(model=idle_model, apps=[ProbeApp()], store=url) as h:
        assert await h.status() == before
    assert idle_model.requests == []  # opening takes no step


async def test_a_reopened_completed_thread_takes_no_step_until_new_input(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'db'}"
    async with open_agent([DONE], inputs=["clean up"], store=url) as h:
        await h.run_until_idle()
    model = ProbeModel(scripted([DONE, {"text": "and the rest too"}]))
    async with open_agent(model=model, store=url) as h:
        idle = await h.run_until_idle()
        assert (idle.steps, len(model.requests)) == (0, 0)
        assert (await h.status()).status is TaskStatus.COMPLETED
        await h.provide("the rest too")
        await h.run_until_idle()
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)
    assert len(model.requests) == 1


async def test_a_reopened_abandoned_thread_takes_no_step_and_new_input_starts_a_new_task(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'db'}"
    async with open_agent([ABANDON], inputs=["clean up"], store=url) as h:
        await h.run_until_idle()
    model = ProbeModel(scripted([ABANDON, DONE]))  # (a resumed thread goes on from its script's next turn)
    async with open_agent(model=model, store=url) as h:
        idle = await h.run_until_idle()
        assert (idle.steps, len(model.requests)) == (0, 0)
        assert await h.status() == AgentStatus(TaskStatus.ABANDONED, reason="No such folder.")
        await h.provide("clean /tmp then")
        await h.run_until_idle()
        assert await h.status() == AgentStatus(TaskStatus.COMPLETED, result="Cleaned /tmp.")
    assert len(model.requests) == 1


# -- a real process, killed ------------------------------------------------------------------------


async def _status_in_store(url: str) -> dict[str, Any] | None:
    async with await open_store(url) as store:
        try:
            reader = await store.open_reader("t")
        except ThreadNotFoundError:
            return None
        async with reader:
            state = await load_state(reader, make_converter(), "t")
    status = state.status
    return {"state": state.state.value, "status": status.status.value, "question": status.question,
            "result": status.result}


async def test_a_chat_killed_with_sigkill_while_it_waits_for_the_user_resumes_with_that_status(tmp_path: Path) -> None:
    """A ``chat`` process asks its question and waits for the answer; killed there, its thread
    says ``waiting_user`` with the question to ``state`` and to the process that resumes it,
    which takes no step until the answer comes."""
    url = f"sqlite:{tmp_path / 'db'}"
    model = f"scripted:{write_script(tmp_path / 'script.json', [ASK, DONE, {'text': 'never said'}])}"
    chat = [*LIVECONTEXT, "chat", "--model", model, "--store", url, "--thread", "t"]
    with open(tmp_path / "out", "wb") as out:
        proc = await trio.lowlevel.open_process(chat, stdin=subprocess.PIPE, stdout=out, stderr=out, env=cli_env())
        try:
            assert proc.stdin is not None
            await proc.stdin.send_all(b"clean up\n")  # and the chat waits for the next line
            with trio.fail_after(30):
                while (seen := await _status_in_store(url)) is None or seen["question"] is None:
                    await trio.sleep(0.02)
            assert proc.poll() is None  # still running: it waits for its user
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                with trio.CancelScope(shield=True):
                    await proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert seen == {"state": "WaitingInput", "status": "waiting_user", "question": "Which folder?", "result": None}
    state = await run_cli("state", "--store", url, "--thread", "t", "--json")
    assert state.returncode == 0, state.stderr
    assert {k: json.loads(state.stdout)[k] for k in ("status", "question")} == {
        "status": "waiting_user", "question": "Which folder?"}
    resumed = await run_cli("run", "--model", model, "--store", url, "--thread", "t", "--json")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert (summary["status"], summary["question"], len(summary["entries"])) == ("waiting_user", "Which folder?", 3)
    answered = await run_cli("run", "--model", model, "--store", url, "--thread", "t", "--input", "/tmp", "--json")
    assert answered.returncode == 0, answered.stderr
    summary = json.loads(answered.stdout)
    assert (summary["status"], summary["result"]) == ("completed", "Cleaned /tmp.")
