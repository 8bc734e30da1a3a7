"""The seeds' other control tools (seed note 003): ``task_abandon``, ``output``, a sub-agent's
``wait_parent``, and the ``waiting_internal`` status while an agent waits on another agent."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from livecontext.actors import SubAgents
from livecontext.actors.apps import App, Notebook, tool
from livecontext.actors.history import load_state
from livecontext.protocol.agent import AfterToolExecute, AgentOutput, AgentStatus, BeforeModelCall, IdleReason
from livecontext.protocol.history import (
    EngineState,
    ModelReply,
    ModelRequest,
    TaskStatus,
    ToolResultsEntry,
    ToolStatus,
)
from livecontext.protocol.records import TaskAbandoned
from livecontext.protocol.wire import make_converter
from livecontext.runtime.models import ModelClient, TextCallback
from tests.support.agent_harness import AgentHarness, ProbeModel, open_agent, scripted

S = EngineState


def call(name: str, arguments: Any, text: str = "") -> dict[str, Any]:
    """A scripted model turn that calls one tool."""
    return {"text": text, "tool_calls": [{"name": name, "arguments": arguments}]}


ABANDON = call("task_abandon", {"reason": "the folder does not exist"})
OUTPUT = call("output", {"text": "Half done: 2 of 4 files renamed."})


async def last_result(h: AgentHarness) -> tuple[ToolStatus, str]:
    results = (await h.entries())[-1]
    assert isinstance(results, ToolResultsEntry)
    (result,) = results.results
    return result.status, result.content.live.text


class HeldAfterFirst(ModelClient):
    """Answers its first call at once; holds each later one until ``release`` is set."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0
        self.held = trio.Event()
        self.release = trio.Event()

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.calls += 1
        if self.calls > 1:
            self.held.set()
            await self.release.wait()
        return await self.inner.complete(request, on_text)

    async def aclose(self) -> None:
        await self.inner.aclose()


# -- task_abandon --------------------------------------------------------------------------------


async def test_task_abandon_ends_the_task_with_status_abandoned_and_its_reason() -> None:
    model = ProbeModel(scripted([ABANDON, {"text": "never said"}]))
    async with open_agent(model=model, inputs=["rename the files in /nope"]) as h:
        idle = await h.run_until_idle()
        assert (idle.state, idle.reason) == (S.WAITING_INPUT, IdleReason.NO_INPUT)
        assert await h.status() == AgentStatus(TaskStatus.ABANDONED, reason="the folder does not exist")
        status, text = await last_result(h)
        assert status is ToolStatus.OK and "Task abandoned" in text and "the folder does not exist" in text
        # committed with the result: a reader of the log finds it
        assert (await h.logged()).task.ended == TaskAbandoned("the folder does not exist")
        await h.settle()
        assert h.of_type(AfterToolExecute)[-1].gist == "task abandoned: the folder does not exist"
    assert len(model.requests) == 1


async def test_an_abandoned_agent_takes_no_step_until_new_input_which_starts_a_new_task() -> None:
    model = ProbeModel(scripted([ABANDON, {"text": "renamed in /tmp"}]))
    async with open_agent(model=model, inputs=["rename the files in /nope"]) as h:
        await h.run_until_idle()
        idle = await h.run_until_idle()
        assert (idle.steps, len(model.requests)) == (0, 1)
        await h.provide("use /tmp")
        await h.step()
        assert await h.status() == AgentStatus(TaskStatus.ACTIVE)
        await h.run_until_idle()
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)
    seen = [m.content for m in model.requests[1].messages if not m.content.startswith("[Window: ")]
    assert "Task abandoned" in seen[-2] and seen[-1].startswith("use /tmp")


async def test_task_abandon_without_a_reason_gives_a_failed_result_and_the_task_goes_on() -> None:
    model = ProbeModel(scripted([call("task_abandon", {}), {"text": "carrying on"}]))
    async with open_agent(model=model, inputs=["go"]) as h:
        await h.run_until_idle()
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)
    seen = [m.content for m in model.requests[1].messages if not m.content.startswith("[Window: ")]
    assert "argument 'reason' is missing" in seen[-1]


# -- output ----------------------------------------------------------------------------------------


async def test_output_is_published_at_once_and_the_task_goes_on() -> None:
    model = HeldAfterFirst(scripted([OUTPUT, {"text": "all 4 renamed"}]))
    async with open_agent(model=model, inputs=["rename the files"]) as h:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run_until_idle)
            await model.held.wait()  # the next model call has started: the task went on
            await h.settle()
            assert h.of_type(AgentOutput) == [AgentOutput("t1", "call_0_0", "Half done: 2 of 4 files renamed.")]
            assert await h.status() == AgentStatus(TaskStatus.ACTIVE)
            model.release.set()
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)
        await h.settle()
        assert h.of_type(AfterToolExecute)[0].gist == "shown to the user: Half done: 2 of 4 files renamed."
        before_second_call = h.events.index(h.of_type(BeforeModelCall)[1])
        assert h.events.index(h.of_type(AgentOutput)[0]) < before_second_call
    assert model.calls == 2


async def test_output_is_recorded_with_its_text_and_changes_no_status() -> None:
    async with open_agent([OUTPUT, {"text": "done"}], inputs=["go"]) as h:
        await h.step()
        await h.step()
        await h.step()  # output's result
        recorded = [r for r in (await h.logged()).recorded]
        assert [(r.name, r.status) for r in recorded] == [("output", ToolStatus.OK)]
        assert "Half done: 2 of 4 files renamed." in recorded[0].content.live.text
        assert await h.status() == AgentStatus(TaskStatus.ACTIVE)


async def test_output_with_a_blank_text_gives_a_failed_result_and_publishes_nothing() -> None:
    async with open_agent([call("output", {"text": "  "}), {"text": "ok"}], inputs=["go"]) as h:
        await h.run_until_idle()
        await h.settle()
        assert h.of_type(AgentOutput) == []
        assert h.of_type(AfterToolExecute)[0].status is ToolStatus.FAILED


# -- wait_parent and waiting_internal: sub-agents ----------------------------------------------


SPAWN = [call("spawn_subagent", {"task": "pick a base"}), {"text": "the parent carries on"}]


async def test_a_sub_agent_is_offered_wait_parent_instead_of_wait_user_response_and_its_message_is_the_answer(
) -> None:
    sub = ProbeModel(scripted([call("wait_parent", {"message": "Base 2 or base 10?"})]))
    apps = [Notebook(), SubAgents(lambda: sub)]
    async with open_agent(SPAWN, inputs=["delegate it"], apps=apps) as h:
        await h.run_until_idle(timeout=30)
        results = [e for e in await h.entries() if isinstance(e, ToolResultsEntry)][0].results
        assert [r.status for r in results] == [ToolStatus.OK]
        assert results[0].content.live.text.startswith("Base 2 or base 10?\n(sub-agent call_0_0 waits for your reply")
        async with await h.store.open_reader("t1/sub/call_0_0") as reader:
            state = await load_state(reader, make_converter(), "t1/sub/call_0_0")
        assert state.status == AgentStatus(TaskStatus.WAITING_PARENT, question="Base 2 or base 10?")
        assert state.state is S.WAITING_INPUT
    names = [spec.name for spec in sub.requests[0].tools]
    assert "wait_parent" in names and "wait_user_response" not in names


async def test_a_top_level_agent_is_not_offered_wait_parent() -> None:
    model = ProbeModel(scripted([{"text": "hi"}]))
    async with open_agent(model=model, inputs=["hello"]) as h:
        await h.run_until_idle()
    assert "wait_parent" not in [spec.name for spec in model.requests[0].tools]


async def test_an_agent_waiting_on_its_sub_agent_is_waiting_internal_and_names_the_call() -> None:
    sub = ProbeModel(scripted([call("task_complete", {"result": "base 10"})]))
    sub.gate = trio.Event()
    apps = [Notebook(), SubAgents(lambda: sub)]
    async with open_agent(SPAWN, inputs=["delegate it"], apps=apps) as h:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run_until_idle, None, 30)
            await sub.started.wait()  # the sub-agent is at work
            assert await h.status() == AgentStatus(TaskStatus.WAITING_INTERNAL,
                                                   waiting_on="spawn_subagent call call_0_0")
            sub.gate.set()
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)


class Remote(App):
    """A user's app: one tool that waits on an agent elsewhere, one that only has such a name."""

    name = "remote"

    def __init__(self) -> None:
        self.gate = trio.Event()
        self.started = trio.Event()

    def fresh(self) -> Remote:
        return self

    @tool(waits_on_agent=True)
    async def delegate(self, task: str) -> str:
        """Hand a task to an agent elsewhere and wait for its answer.

        Args:
            task: The task.
        """
        self.started.set()
        await self.gate.wait()
        return "done there"

    @tool
    async def ask_agent(self, question: str) -> str:
        """Look a question up (named like the systems' tool, but it waits on no agent).

        Args:
            question: The question.
        """
        self.started.set()
        await self.gate.wait()
        return "looked up"


@pytest.mark.parametrize(("tool_name", "status"), [("delegate", TaskStatus.WAITING_INTERNAL),
                                                   ("ask_agent", TaskStatus.ACTIVE)])
async def test_a_tool_that_says_it_waits_on_an_agent_makes_the_status_waiting_internal_and_a_name_alone_does_not(
        tool_name: str, status: TaskStatus) -> None:
    remote = Remote()
    argument = {"task": "x"} if tool_name == "delegate" else {"question": "x"}
    async with open_agent([call(tool_name, argument), {"text": "ok"}], inputs=["go"], apps=[remote]) as h:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run_until_idle, None, 30)
            await remote.started.wait()  # the call is under way
            assert (await h.status()).status is status
            remote.gate.set()
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)


async def test_a_pending_ordinary_tool_call_is_active_not_waiting_internal() -> None:
    async with open_agent([call("notebook_replace", {"old": "", "new": "x"}), {"text": "ok"}], inputs=["go"],
                          apps=[Notebook()]) as h:
        await h.step()
        await h.step()  # the output: its call waits to run
        assert (await h.tail()).state is S.WAITING_TOOL_RESULTS
        assert await h.status() == AgentStatus(TaskStatus.ACTIVE)



async def test_a_parents_message_subagent_reply_is_the_input_a_waiting_sub_agent_goes_on_with() -> None:
    sub = ProbeModel(scripted([call("wait_parent", {"message": "Base 2 or base 10?"}),
                               call("task_complete", {"result": "1010"})]))
    parent = [call("spawn_subagent", {"task": "write ten"}),
              call("message_subagent", {"name": "call_0_0", "message": "base 2"}),
              {"text": "ten is 1010"}]
    async with open_agent(parent, inputs=["delegate it"], apps=[Notebook(), SubAgents(lambda: sub)]) as h:
        await h.run_until_idle(timeout=30)
        results = [r for e in await h.entries() if isinstance(e, ToolResultsEntry) for r in e.results]
        assert [(r.name, r.status) for r in results] == [("spawn_subagent", ToolStatus.OK),
                                                         ("message_subagent", ToolStatus.OK)]
        assert results[1].content.live.text == "1010"
        async with await h.store.open_reader("t1/sub/call_0_0") as reader:
            state = await load_state(reader, make_converter(), "t1/sub/call_0_0")
        assert state.status == AgentStatus(TaskStatus.COMPLETED, result="1010")
    seen = [m.content for m in sub.requests[1].messages if not m.content.startswith("[Window: ")]
    assert "Base 2 or base 10?" in seen[-2] and seen[-1].startswith("base 2")  # the reply came as its input


async def test_message_subagent_to_a_sub_agent_that_does_not_wait_or_does_not_exist_fails_in_one_line() -> None:
    sub = ProbeModel(scripted([call("task_complete", {"result": "done"})]))
    parent = [call("spawn_subagent", {"task": "do it"}),
              {"text": "", "tool_calls": [{"name": "message_subagent", "arguments": {"name": "call_0_0", "message": "more"}},
                                          {"name": "message_subagent", "arguments": {"name": "nobody", "message": "hi"}}]},
              {"text": "ok"}]
    async with open_agent(parent, inputs=["delegate it"], apps=[Notebook(), SubAgents(lambda: sub)]) as h:
        await h.run_until_idle(timeout=30)
        results = [r for e in await h.entries() if isinstance(e, ToolResultsEntry) for r in e.results][1:]
    assert [r.status for r in results] == [ToolStatus.FAILED, ToolStatus.FAILED]
    assert ("sub-agent t1/sub/call_0_0 does not wait for a message (it is completed); message_subagent answers "
            "a sub-agent that called wait_parent") in results[0].content.live.text
    assert "no sub-agent t1/sub/nobody" in results[1].content.live.text
