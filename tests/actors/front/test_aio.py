"""The front door on asyncio: ``livecontext.aio.open_agent`` runs the agents as a Trio guest of
the running asyncio loop (one guest run for every agent of the loop); a cancelled asyncio caller
cancels the agent's step, and an error of the Trio side is raised with its own type."""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any

import pytest
import sniffio
import trio

import livecontext
import livecontext.aio
from livecontext import AgentEvent, EngineState, Reply, TaskStatus
from livecontext.actors.history import HistoryConflictError
from livecontext.protocol.history import ToolResultsEntry, ToolStatus
from livecontext.runtime import UsageError
from livecontext.runtime.models import ScriptedModel
from tests.support import approval_tools as at


def scripted(*turns: dict[str, object]) -> ScriptedModel:
    return ScriptedModel.from_turns(list(turns))


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": name, "arguments": json.dumps(arguments)}


@pytest.fixture(autouse=True)
def _no_runs() -> None:
    at.RUNS.clear()


def test_an_asyncio_script_sends_streams_and_approves_a_tool_call() -> None:
    model = scripted({"text": "hi there"}, {"text": "streamed"},
                     {"tool_calls": [call("pay", amount=5)]}, {"text": "paid it"})

    async def main() -> list[Any]:
        seen: list[Any] = []
        async with livecontext.aio.open_agent(model=model, tools=[at.pay]) as agent:
            reply = await agent.send("hello")
            seen.append((reply.text, reply.state))
            items = [item async for item in agent.stream("stream please")]
            seen.append(items)
            waiting = await agent.send("pay 5")
            seen.append(waiting.status.status)
            (pending,) = await agent.pending_approvals()
            await agent.approve(pending.id)
            seen.append(at.RUNS[:])  # (approved, not run yet)
            done = await agent.run()
            seen.append((done.text, at.RUNS[:]))
            seen.append((await agent.state()).state)
        return seen

    said, streamed, waiting, before_run, (text, runs), state = asyncio.run(main())
    assert said == ("hi there", EngineState.WAITING_INPUT)
    assert isinstance(streamed[-1], Reply) and streamed[-1].text == "streamed"
    assert streamed[:-1] and all(isinstance(item, AgentEvent.__args__) for item in streamed[:-1])  # type: ignore[attr-defined]
    assert waiting is TaskStatus.WAITING_APPROVAL
    assert before_run == []
    assert (text, runs) == ("paid it", [("pay", {"amount": 5})])
    assert state is EngineState.WAITING_INPUT


def test_two_agents_open_in_one_loop_share_one_trio_guest_run_which_ends_after_the_last_closes() -> None:
    roots: list[tuple[str, trio.lowlevel.Task]] = []
    libraries: list[str] = []

    @livecontext.tool
    async def where(who: str) -> str:
        """Say which Trio run runs this tool.

        Args:
            who: Who asks.
        """
        roots.append((who, trio.lowlevel.current_root_task()))
        libraries.append(sniffio.current_async_library())  # (the model clients' HTTP stack asks it)
        return "here"

    def model() -> ScriptedModel:
        return scripted({"tool_calls": [call("where", who="x")]}, {"text": "done"})

    async def main() -> None:
        async with livecontext.aio.open_agent(model=model(), tools=[where], thread="a") as a, \
                livecontext.aio.open_agent(model=model(), tools=[where], thread="b") as b:
            replies = await asyncio.gather(a.send("go"), b.send("go"))
            assert [r.text for r in replies] == ["done", "done"]
        assert len(roots) == 2 and roots[0][1] is roots[1][1]  # one Trio run for both
        assert inspect.getcoroutinestate(roots[0][1].coro) == inspect.CORO_CLOSED  # ended with the last agent
        async with livecontext.aio.open_agent(model=model(), tools=[where], thread="c") as c:
            await c.send("go")
        assert roots[2][1] is not roots[0][1]  # a later agent starts a new run
        assert libraries == ["trio"] * 3  # Trio code in the guest sees Trio, not the asyncio host

    asyncio.run(main())


def test_a_cancelled_asyncio_task_cancels_the_agents_step_and_the_agent_goes_on() -> None:
    calls: list[str] = []
    started = asyncio.Event()
    model = scripted({"tool_calls": [call("wait_for_news")]}, {"text": "nothing new"}, {"text": "again"})

    async def main() -> None:
        async with livecontext.aio.open_agent(model=model, tools=[news_tool(calls, started)]) as agent:
            task = asyncio.create_task(agent.send("any news?"))
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert calls == ["started", "cancelled"]  # the tool's step was cancelled before the task ended
            assert (await agent.state()).state is EngineState.WAITING_TOOL_RESULTS  # the step did not complete
            reply = await agent.send("try again")  # usable after
            assert reply.state is EngineState.WAITING_INPUT and reply.text == "again"
            assert calls == ["started", "cancelled"]  # (not run again: it is not idempotent)
            (results,) = [e for e in await agent.history() if isinstance(e, ToolResultsEntry)]
            assert results.results[0].status is ToolStatus.INTERRUPTED  # the engine recorded the cut

    asyncio.run(main())


def test_an_error_of_the_trio_side_is_raised_in_the_asyncio_caller_with_its_type() -> None:
    async def main() -> None:
        async with livecontext.aio.open_agent(model="echo") as agent:
            with pytest.raises(HistoryConflictError) as raised:
                await agent.deny("no-such-call")
            assert isinstance(raised.value, UsageError)
            assert (await agent.send("still here")).text == "echo: still here"

    asyncio.run(main())


def test_a_closed_agent_refuses_calls_in_one_line() -> None:
    async def main() -> None:
        async with livecontext.aio.open_agent(model="echo") as agent:
            pass
        with pytest.raises(UsageError, match=r"^the agent of thread main is closed: open one again"):
            await agent.send("hello")

    asyncio.run(main())


async def test_open_agent_refuses_without_a_running_asyncio_loop() -> None:  # (a Trio test)
    with pytest.raises(UsageError, match="needs a running asyncio event loop"):
        async with livecontext.aio.open_agent(model="echo"):
            pass


def test_importing_livecontext_does_not_import_the_asyncio_front_door() -> None:
    import subprocess
    import sys

    code = "import livecontext, sys; print('livecontext.aio' in sys.modules, 'trio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def news_tool(calls: list[str], started: asyncio.Event) -> Any:
    """A tool that waits forever the first time (noting its start and its cancellation)."""

    @livecontext.tool
    async def wait_for_news() -> str:
        """Wait for news (forever, the first time)."""
        calls.append("started")
        if len(calls) == 1:
            asyncio.get_running_loop().call_soon_threadsafe(started.set)
            try:
                await trio.Event().wait()  # never set
            except trio.Cancelled:
                calls.append("cancelled")
                raise
        return "no news"

    return wait_for_news


def test_a_cancelled_task_reading_a_stream_cancels_the_agents_step() -> None:
    calls: list[str] = []
    started = asyncio.Event()
    model = scripted({"tool_calls": [call("wait_for_news")]}, {"text": "nothing new"}, {"text": "again"})

    async def main() -> None:
        async with livecontext.aio.open_agent(model=model, tools=[news_tool(calls, started)]) as agent:
            seen: list[object] = []

            async def read() -> None:
                async for item in agent.stream("any news?"):
                    seen.append(item)

            task = asyncio.create_task(read())
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert calls == ["started", "cancelled"]
            assert seen and not any(isinstance(item, Reply) for item in seen)
            assert (await agent.send("try again")).state is EngineState.WAITING_INPUT

    asyncio.run(main())


def test_stopping_a_stream_early_does_not_stop_the_run() -> None:
    model = scripted({"tool_calls": [call("pay", amount=1)]}, {"text": "later"})

    async def main() -> None:
        async with livecontext.aio.open_agent(model=model, tools=[at.pay]) as agent:
            async for _item in agent.stream("pay 1"):
                break  # the run goes on in the agent
            reply = await agent.run()  # waits for it: it stopped for the approval
            assert reply.status.status is TaskStatus.WAITING_APPROVAL

    asyncio.run(main())


def test_a_queued_send_cancelled_does_not_cancel_the_run_in_progress() -> None:
    calls: list[str] = []
    started = asyncio.Event()
    gate = asyncio.Event()
    model = scripted({"tool_calls": [call("wait_for_news")]}, {"text": "nothing new"}, {"text": "second"})

    async def main() -> None:
        async with livecontext.aio.open_agent(model=model, tools=[news_tool(calls, started)]) as agent:
            first = asyncio.create_task(agent.send("any news?"))
            await started.wait()
            queued = asyncio.create_task(agent.send("queued"))
            asyncio.get_running_loop().call_soon(gate.set)
            await gate.wait()
            queued.cancel()
            with pytest.raises(asyncio.CancelledError):
                await queued
            assert calls == ["started"]  # the first send's tool still runs
            first.cancel()
            with pytest.raises(asyncio.CancelledError):
                await first
            assert calls == ["started", "cancelled"]

    asyncio.run(main())


def test_closing_the_agent_while_a_call_runs_fails_that_call_in_one_line() -> None:
    calls: list[str] = []
    started = asyncio.Event()
    model = scripted({"tool_calls": [call("wait_for_news")]}, {"text": "nothing new"})

    async def main() -> None:
        async with livecontext.aio.open_agent(model=model, tools=[news_tool(calls, started)]) as agent:
            task = asyncio.create_task(agent.send("any news?"))
            await started.wait()
        with pytest.raises(UsageError, match=r"^the agent of thread main was closed while send ran$"):
            await task
        assert calls == ["started", "cancelled"]

    asyncio.run(main())


def test_an_agent_that_fails_to_open_raises_with_its_type_and_the_next_one_opens() -> None:
    async def main() -> None:
        with pytest.raises(UsageError) as raised:
            async with livecontext.aio.open_agent(model="echo", thread="no spaces allowed"):
                pass
        assert "thread" in str(raised.value)
        async with livecontext.aio.open_agent(model="echo") as agent:
            assert (await agent.send("hi")).text == "echo: hi"

    asyncio.run(main())


def test_a_loop_whose_agents_all_closed_is_not_kept_alive_by_its_guest_run() -> None:
    import gc
    import weakref

    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def main() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        async with livecontext.aio.open_agent(model="echo") as agent:
            await agent.send("hi")

    asyncio.run(main())
    gc.collect()
    assert loops[0]() is None


def test_an_agent_left_open_when_asyncio_run_ends_is_closed_and_the_thread_can_run_trio_again(
        caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> str:
        agent = await livecontext.aio.start_agent(model="echo")
        return (await agent.send("hi")).text  # (never closed)

    assert asyncio.run(main()) == "echo: hi"
    assert "ending with 1 livecontext agent(s) or system(s) still open in it: closing them" in caplog.text

    async def after() -> str:
        return "trio runs"

    assert trio.run(after) == "trio runs"  # (a guest run left behind would refuse it)
