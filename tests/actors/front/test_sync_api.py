"""The front door without ``async``: ``run_agent`` asks one question from a plain script, and
``open_sync_agent`` gives a :class:`SyncAgent` whose agent runs in a Trio run of its own thread;
both refuse, in one line, to run inside a running event loop."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import trio

import livecontext
from livecontext import EngineState, TaskStatus, UsageError
from livecontext.actors.history import HistoryConflictError
from livecontext.protocol.history import ModelReply, ModelRequest, ToolCall, ToolResultsEntry, ModelInputEntry
from livecontext.runtime.models import ModelClient, ScriptedModel, TextCallback
from tests.support import approval_tools as at
from tests.support.command import cli_env

INSIDE = (r"^run_agent was called inside a running {loop}, which it would block: use `await` with the async API "
          r"\(livecontext\.open_agent\) from a Trio program, or call run_agent from a plain script / a worker thread$")


def scripted(*turns: dict[str, object]) -> ScriptedModel:
    return ScriptedModel.from_turns(list(turns))


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": name, "arguments": json.dumps(arguments)}


def agent_threads() -> list[threading.Thread]:
    """The worker threads of the sync agents alive now."""
    return [t for t in threading.enumerate() if t.name.startswith("livecontext agent ")]


@pytest.fixture(autouse=True)
def _no_runs() -> None:
    at.RUNS.clear()


def test_run_agent_answers_a_prompt_from_plain_code() -> None:
    reply = livecontext.run_agent("hello", model="echo")
    assert reply.text == "echo: hello" and reply.state is EngineState.WAITING_INPUT and reply.steps >= 1


def test_run_agent_takes_open_agents_keywords_and_runs_the_tools_a_scripted_model_calls() -> None:
    model = scripted({"tool_calls": [call("look", what="the sky")]}, {"text": "it is blue"})
    reply = livecontext.run_agent("look up", model=model, tools=[at.look], system="You look at things.")
    assert reply.text == "it is blue"
    assert at.RUNS == [("look", {"what": "the sky"})]


def test_run_agent_with_a_durable_store_and_a_thread_resumes_it_on_the_next_call(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'trip.db'}"
    first = livecontext.run_agent("plan a trip", model="echo", store=store, thread="trip")
    second = livecontext.run_agent("by train", model="echo", store=store, thread="trip")
    assert (first.text, second.text) == ("echo: plan a trip", "echo: by train")
    assert second.usage.model_calls == 2  # the thread's calls so far: the first run's and its own

    async def inputs() -> list[str]:
        async with livecontext.open_agent(store=store, thread="trip") as agent:
            return [e.text for e in await agent.history() if isinstance(e, ModelInputEntry)]

    assert trio.run(inputs) == ["plan a trip", "by train"]


def test_run_agent_inside_a_running_asyncio_loop_refuses_in_one_line_and_opens_nothing(tmp_path: Path) -> None:
    db = tmp_path / "never.db"

    async def main() -> None:
        with pytest.raises(UsageError, match=INSIDE.format(loop="asyncio event loop")):
            livecontext.run_agent("hello", model="echo", store=f"sqlite:{db}")

    asyncio.run(main())
    assert not db.exists()


def test_run_agent_from_a_worker_thread_of_an_asyncio_program_runs() -> None:
    async def main() -> livecontext.Reply:
        return await asyncio.to_thread(livecontext.run_agent, "hello", model="echo")

    assert asyncio.run(main()).text == "echo: hello"


def test_a_sync_agents_call_inside_a_running_asyncio_loop_refuses_and_the_agent_goes_on() -> None:
    with livecontext.open_sync_agent(model="echo") as agent:
        async def main() -> None:
            with pytest.raises(UsageError, match=r"^SyncAgent\.send was called inside a running asyncio event loop, "):
                agent.send("hello")

        asyncio.run(main())
        assert agent.history() == ()
        assert agent.send("hello").text == "echo: hello"
    assert agent_threads() == []


async def test_run_agent_inside_a_running_trio_run_refuses_in_one_line_and_opens_nothing(tmp_path: Path) -> None:
    db = tmp_path / "never.db"
    with pytest.raises(UsageError, match=INSIDE.format(loop="Trio run")):
        livecontext.run_agent("hello", model="echo", store=f"sqlite:{db}")
    assert not db.exists()


async def test_run_agent_from_a_worker_thread_of_a_trio_program_runs() -> None:
    reply = await trio.to_thread.run_sync(lambda: livecontext.run_agent("hello", model="echo"))
    assert reply.text == "echo: hello"


async def test_open_sync_agent_inside_a_running_trio_run_refuses_and_starts_no_thread() -> None:
    with pytest.raises(UsageError, match=r"^open_sync_agent was called inside a running Trio run, "):
        livecontext.open_sync_agent(model="echo")
    assert agent_threads() == []


def test_a_sync_agent_keeps_one_thread_across_sends_and_its_worker_thread_ends_with_the_block() -> None:
    with livecontext.open_sync_agent(model="echo", thread="chat") as agent:
        assert [t.name for t in agent_threads()] == ["livecontext agent chat"]
        assert repr(agent) == "<SyncAgent of thread 'chat', open>"
        assert agent.thread == "chat" and agent.changed == ()
        first = agent.send("hello")
        second = agent.send("again")
        assert (first.text, second.text) == ("echo: hello", "echo: again")
        assert [e.text for e in agent.history() if isinstance(e, ModelInputEntry)] == ["hello", "again"]
        state = agent.state()
        assert state.thread == "chat" and state.model_outputs == 2
    assert agent_threads() == []


def test_a_sync_agent_takes_its_thread_id_from_the_spec_it_opens() -> None:
    with livecontext.open_sync_agent(spec=livecontext.AgentSpec(thread="from-spec"), model="echo") as agent:
        assert agent.thread == "from-spec"
        assert [t.name for t in agent_threads()] == ["livecontext agent from-spec"]
        assert agent.state().thread == "from-spec"
    assert agent_threads() == []


def test_a_sync_agent_stops_for_approval_and_runs_on_once_the_call_is_approved() -> None:
    model = scripted({"tool_calls": [call("pay", amount=5)]}, {"text": "paid"})
    with livecontext.open_sync_agent(model=model, tools=[at.pay]) as agent:
        waiting = agent.send("pay 5")
        assert waiting.status.status is TaskStatus.WAITING_APPROVAL
        assert agent.pending_approvals() == (ToolCall("call_0_0", "pay", '{"amount": 5}'),)
        assert at.RUNS == []
        recorded = agent.approve("call_0_0", by="ann")
        assert recorded.decided.approved and recorded.pending == ()
        done = agent.run()
        assert done.text == "paid" and at.RUNS == [("pay", {"amount": 5})]
        assert any(isinstance(e, ToolResultsEntry) for e in agent.history())


def test_an_error_of_the_agents_run_is_raised_in_the_caller_with_its_type_and_the_agent_goes_on() -> None:
    with livecontext.open_sync_agent(model="echo") as agent:
        with pytest.raises(HistoryConflictError, match=r"^thread main has no pending approval for call id 'c9'"):
            agent.deny("c9", "no")
        with pytest.raises(UsageError, match=r"^unknown input mode 'loud'"):
            agent.send("hi", mode="loud")
        assert agent.send("hello").text == "echo: hello"
    assert agent_threads() == []


def test_the_worker_thread_ends_when_the_with_block_raises() -> None:
    with pytest.raises(ZeroDivisionError), livecontext.open_sync_agent(model="echo") as agent:
        agent.send("hello")
        assert len(agent_threads()) == 1
        1 / 0  # noqa: B018
    assert agent_threads() == []


def test_a_closed_sync_agent_refuses_a_call_in_one_line() -> None:
    agent = livecontext.open_sync_agent(model="echo", thread="gone")
    agent.close()
    agent.close()  # (again: nothing)
    assert agent_threads() == [] and repr(agent) == "<SyncAgent of thread 'gone', closed>"
    with pytest.raises(UsageError, match=r"^this agent of thread gone is closed: open one again with "
                                         r"livecontext\.open_sync_agent\(\.\.\.\)$"):
        agent.send("hello")


def test_an_agent_that_cannot_open_raises_its_error_and_leaves_no_thread() -> None:
    with pytest.raises(UsageError, match=r"^invalid thread id 'no/such/\.\.'"):
        livecontext.open_sync_agent(model="echo", thread="no/such/..")
    assert agent_threads() == []


def test_a_sync_agent_forks_its_thread_into_the_same_store(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'fork.db'}"
    with livecontext.open_sync_agent(model="echo", store=store, thread="base") as agent:
        agent.send("hello")
        forked = agent.fork("copy")
    assert forked.thread_id == "copy"
    assert livecontext.run_agent("again", store=store, thread="copy").usage.model_calls == 2


class Stuck(ModelClient):
    """A model whose call never ends on its own: it says when it started, and whether it was cancelled."""

    name = "stuck"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = False

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.started.set()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            self.cancelled = True
            raise
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        pass


def test_closing_a_sync_agent_cancels_a_call_another_thread_waits_on_and_tells_it_why() -> None:
    model = Stuck()
    raised: list[BaseException] = []
    agent = livecontext.open_sync_agent(model=model, lifecycle=False, thread="busy")

    def ask() -> None:
        try:
            agent.send("think forever")
        except BaseException as exc:  # noqa: BLE001 (kept for the assertion below)
            raised.append(exc)

    caller = threading.Thread(target=ask)
    caller.start()
    model.started.wait()
    agent.close()
    caller.join(timeout=60)  # (a safety net)
    assert model.cancelled and agent_threads() == []
    assert [(type(e), str(e)) for e in raised] == [(UsageError, "the agent of thread busy was closed while send ran")]


def test_a_ctrl_c_while_a_call_waits_cancels_the_call_and_ends_the_worker_thread() -> None:
    model = Stuck()
    main = threading.main_thread()
    assert threading.current_thread() is main  # (a signal is handled in the main thread only)

    def interrupt_once_the_model_call_started() -> None:
        model.started.wait()
        signal.pthread_kill(main.ident or 0, signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupter = threading.Thread(target=interrupt_once_the_model_call_started)
    try:
        with livecontext.open_sync_agent(model=model, lifecycle=False) as agent:
            interrupter.start()
            with pytest.raises(KeyboardInterrupt):
                agent.send("think forever")
            assert agent_threads() == []  # gone before the KeyboardInterrupt went on
            assert model.cancelled
            with pytest.raises(UsageError, match="is closed"):
                agent.state()
    finally:
        signal.signal(signal.SIGINT, previous)
        model.started.set()
        interrupter.join(timeout=60)  # (a safety net)
    assert agent_threads() == []


def test_a_script_that_never_closes_its_sync_agent_exits_having_closed_it_and_its_thread_is_kept(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'left.db'}"
    script = ("import atexit, threading, livecontext\n"
              # (run after livecontext's own exit handler, registered later: exit handlers run last first)
              "atexit.register(lambda: print('at exit:', [t.name for t in threading.enumerate()\n"
              "                                          if t.name.startswith('livecontext agent')]))\n"
              f"agent = livecontext.open_sync_agent(model='echo', store={store!r}, thread='left')\n"
              "print(agent.send('hello').text)\n")  # (no close: the agent is closed at exit)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=cli_env(), capture_output=True,
                          text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "echo: hello\nat exit: []\n", "")
    assert livecontext.run_agent("again", store=store, thread="left").usage.model_calls == 2
