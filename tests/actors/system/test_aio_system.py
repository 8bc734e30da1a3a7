"""A system on asyncio: ``livecontext.aio.open_system`` runs it in the Trio guest run of the
running asyncio loop, shared with the loop's agents; a cancelled asyncio caller cancels the
agent's run, and an error of the Trio side is raised with its own type."""

from __future__ import annotations

import asyncio

import pytest
import trio

import livecontext.aio
from livecontext.protocol.history import EngineState, ModelReply, ModelRequest, ToolResultsEntry, ToolStatus
from livecontext.runtime import UsageError
from livecontext.runtime.models import ModelClient, TextCallback

from tests.support.agent_harness import ProbeModel
from tests.support.systems import call, scripted, team


class RootOf(ModelClient):
    """Wraps a client and records the root task of the Trio run each attempt runs in."""

    def __init__(self, inner: ModelClient, roots: list[trio.lowlevel.Task]) -> None:
        self.inner, self.name, self.roots = inner, inner.name, roots

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.roots.append(trio.lowlevel.current_root_task())
        return await self.inner.complete(request, on_text)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Signals(ProbeModel):
    """A probe that also sets an asyncio event when an attempt starts (the guest runs in the
    loop's thread: the loop is told by a callback)."""

    def __init__(self, inner: ModelClient, started: asyncio.Event) -> None:
        super().__init__(inner)
        self.loop, self.asyncio_started = asyncio.get_running_loop(), started

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.loop.call_soon(self.asyncio_started.set)
        return await super().complete(request, on_text)


def test_an_asyncio_script_runs_a_system_whose_agents_ask_each_other() -> None:
    planner = scripted([call("ask_agent", to="researcher", question="What do we know about Lisbon?"),
                        {"text": "Plan: three days in Lisbon."}])
    models = {"planner": planner, "researcher": scripted([{"text": "Lisbon has seven hills."}])}

    async def main() -> None:
        async with livecontext.aio.open_system(team("planner", "researcher"), store="memory:",
                                               models=models) as system:
            assert (system.name, list(system.agents)) == ("team", ["planner", "researcher"])
            answer = await system.send("planner", "Plan a trip to Lisbon.")
            assert (answer.text, answer.reason) == ("Plan: three days in Lisbon.", "no_input")
            status = await system.status()
            assert [(a.name, a.state) for a in status.agents] == [
                ("planner", EngineState.WAITING_INPUT), ("researcher", EngineState.WAITING_INPUT)]
            assert await system.checkpoint() > 0
        with pytest.raises(UsageError, match=r"^system 'team' is closed: open one again with livecontext.aio.open_system"):
            await system.status()

    asyncio.run(main())


def test_a_system_and_an_agent_open_in_one_loop_share_one_trio_guest_run() -> None:
    roots: list[trio.lowlevel.Task] = []
    system_models = {"a": RootOf(scripted([{"text": "from a"}]), roots)}
    agent_model = RootOf(scripted([{"text": "from the agent"}]), roots)

    async def main() -> None:
        async with livecontext.aio.open_system(team("a"), store="memory:", models=system_models) as system, \
                livecontext.aio.open_agent(model=agent_model, store="memory:") as agent:
            answers = await asyncio.gather(system.send("a", "hi"), agent.send("hi"))
            assert [answers[0].text, answers[1].text] == ["from a", "from the agent"]

    asyncio.run(main())
    assert len(roots) == 2 and roots[0] is roots[1]


def test_a_cancelled_asyncio_send_cancels_the_agents_run_and_the_system_goes_on() -> None:
    async def main() -> None:
        started = asyncio.Event()
        probe = Signals(scripted([{"text": "late"}, {"text": "second"}]), started)
        probe.gate = trio.Event()  # (never set: the first attempt waits until it is cancelled)
        async with livecontext.aio.open_system(team("a"), store="memory:", models={"a": probe}) as system:
            task = asyncio.create_task(system.send("a", "take your time"))
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert (probe.cancelled, probe.finished) == (1, 0)
            probe.gate = None
            answer = await system.send("a", "now")
            # the work the cancel cut is finished first (the first input gets its answer), then "now"
            assert (answer.text, probe.finished) == ("second", 2)

    asyncio.run(main())


def test_an_error_of_the_trio_side_is_raised_in_the_asyncio_caller_with_its_type() -> None:
    async def main() -> None:
        async with livecontext.aio.open_system(team("a", "b"), store="memory:") as system:
            with pytest.raises(UsageError, match=r"^no agent named 'c' in system 'team'; the agents there are: a, b$"):
                await system.send("c", "hello")
            with pytest.raises(UsageError, match=r"^no agent named 'c' in system 'team'"):
                system.agent("c")

    asyncio.run(main())


def test_a_system_agents_call_that_needs_approval_is_decided_from_asyncio() -> None:
    boss = scripted([call("send_message", to="aide", text="book the hall"), {"text": "done"}])
    bp = team("boss", "aide", extra='approval = ["send_message"]\n')

    async def main() -> None:
        async with livecontext.aio.open_system(bp, store="memory:", models={"boss": boss}) as system:
            stopped = await system.send("boss", "get the hall booked")
            assert stopped.reason == "waiting_approval: approval of send_message call call_0_0"
            done = await system.approve("boss", "call_0_0", by="ada")
            assert (done.text, done.reason) == ("done", "no_input")
            (boss_status,) = [a for a in (await system.status()).agents if a.name == "boss"]
            outcomes = [(r.name, r.status) for e in boss_status.entries if isinstance(e, ToolResultsEntry)
                        for r in e.results]
            assert outcomes == [("send_message", ToolStatus.OK)]

    asyncio.run(main())


def test_open_system_refuses_without_a_running_asyncio_loop() -> None:
    async def main() -> None:
        with pytest.raises(UsageError, match=r"^livecontext.aio.open_system\(...\) needs a running asyncio event loop"):
            async with livecontext.aio.open_system(team("a"), store="memory:"):
                pass

    trio.run(main)
