"""Approvals through the Python API: a call that needs approval stops the agent with status
``waiting_approval``; ``approve`` (possibly with edited arguments) or ``deny`` (with a reason the
model reads) decides it, and ``run`` carries on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import livecontext
from livecontext import EngineState, TaskStatus
from livecontext.protocol.agent import ApprovalsRequested
from livecontext.protocol.history import ModelReply, ModelRequest, ToolCall, ToolResultsEntry, ToolStatus
from livecontext.runtime.models import ModelClient, ScriptedModel, TextCallback
from tests.support import approval_tools as at


class Seen(ModelClient):
    """A scripted model that keeps every request it was sent (what the model read)."""

    def __init__(self, *turns: dict[str, Any]) -> None:
        self.inner = ScriptedModel.from_turns(list(turns))
        self.name = self.inner.name
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.requests.append(request)
        return await self.inner.complete(request, on_text)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def last_read(self) -> str:
        """Every message of the last request, as text."""
        return "\n".join(m.content or "" for m in self.requests[-1].messages)


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": name, "arguments": json.dumps(arguments)}


def calls(*made: dict[str, object]) -> dict[str, object]:
    return {"tool_calls": list(made)}


@pytest.fixture(autouse=True)
def _no_runs() -> None:
    at.RUNS.clear()


async def results(agent: livecontext.Agent) -> list[tuple[str, ToolStatus, str]]:
    return [(r.name, r.status, r.content.live.text) for e in await agent.history()
            if isinstance(e, ToolResultsEntry) for r in e.results]


async def test_a_tool_that_needs_approval_stops_the_agent_waiting_approval_naming_the_call() -> None:
    model = Seen(calls(call("pay", amount=5)), {"text": "done"})
    async with livecontext.open_agent(model=model, tools=[at.pay]) as agent:
        reply = await agent.send("pay 5")
        assert reply.status.status is TaskStatus.WAITING_APPROVAL
        assert reply.status.waiting_on == "approval of pay call call_0_0"
        assert reply.status.approvals == (ToolCall("call_0_0", "pay", '{"amount": 5}'),)
        assert reply.reason == "waiting_approval: approval of pay call call_0_0"
        assert reply.state is EngineState.WAITING_TOOL_RESULTS
        assert await agent.pending_approvals() == reply.status.approvals
        assert at.RUNS == []
        again = await agent.run()  # nothing decided: it stays where it is, and the tool is not run
        assert again.status.status is TaskStatus.WAITING_APPROVAL and again.steps == 0
        assert at.RUNS == [] and len(model.requests) == 1


async def test_a_stream_says_when_the_agent_stops_for_approval_and_which_calls_wait() -> None:
    model = Seen(calls(call("pay", amount=5), call("pay", amount=7)), {"text": "done"})
    async with livecontext.open_agent(model=model, tools=[at.pay]) as agent:
        seen = [item async for item in agent.stream("pay twice")]
    (asked,) = [e for e in seen if isinstance(e, ApprovalsRequested)]
    assert asked.calls == (ToolCall("call_0_0", "pay", '{"amount": 5}'), ToolCall("call_0_1", "pay", '{"amount": 7}'))
    assert seen.index(asked) == len(seen) - 2  # (then the reply)
    reply = seen[-1]
    assert isinstance(reply, livecontext.Reply) and reply.status.status is TaskStatus.WAITING_APPROVAL


async def test_approve_runs_the_call_and_the_task_goes_on() -> None:
    model = Seen(calls(call("pay", amount=5)), {"text": "done"})
    async with livecontext.open_agent(model=model, tools=[at.pay]) as agent:
        await agent.send("pay 5")
        recorded = await agent.approve("call_0_0", by="ada")
        assert recorded.decided.approved and recorded.decided.by == "ada" and recorded.pending == ()
        reply = await agent.run()
        assert reply.text == "done" and reply.status.status is TaskStatus.WAITING_USER
        assert await results(agent) == [("pay", ToolStatus.OK, "paid 5")]
    assert at.RUNS == [("pay", {"amount": 5})]


async def test_approve_with_edited_arguments_runs_them_and_the_model_reads_the_edit() -> None:
    model = Seen(calls(call("pay", amount=500)), {"text": "done"})
    async with livecontext.open_agent(model=model, tools=[at.pay]) as agent:
        await agent.send("pay 500")
        await agent.approve("call_0_0", {"amount": 5})
        await agent.run()
    assert at.RUNS == [("pay", {"amount": 5})]
    read = model.last_read()
    assert "user approved this call with edited arguments: {\"amount\":5}" in read and "paid 5" in read


async def test_deny_with_a_reason_never_runs_the_tool_and_the_model_reads_the_reason() -> None:
    model = Seen(calls(call("pay", amount=5)), {"text": "ok, I will not pay"})
    async with livecontext.open_agent(model=model, tools=[at.pay]) as agent:
        await agent.send("pay 5")
        recorded = await agent.deny("call_0_0", "over this month's budget", by="ada")
        assert not recorded.decided.approved and recorded.decided.reason == "over this month's budget"
        reply = await agent.run()
        assert reply.text == "ok, I will not pay"
        ((name, status, text),) = await results(agent)
    assert at.RUNS == []
    assert (name, status) == ("pay", ToolStatus.FAILED)
    assert "ada did not approve" in text and "over this month's budget" in text
    assert "over this month's budget" in model.last_read()


async def test_a_deny_without_a_reason_is_recorded_with_the_reason_denied() -> None:
    async with livecontext.open_agent(model=Seen(calls(call("pay", amount=5)), {"text": "ok"}), tools=[at.pay]) as agent:
        await agent.send("pay 5")
        recorded = await agent.deny("call_0_0")
        assert (recorded.decided.reason, recorded.decided.by) == ("denied", "user")


async def test_calls_of_one_step_are_decided_one_by_one_and_run_in_the_step_order() -> None:
    model = Seen(calls(call("pay", amount=1), call("look", what="sky"), call("pay", amount=2)), {"text": "done"})
    async with livecontext.open_agent(model=model, tools=[at.pay, at.look]) as agent:
        reply = await agent.send("pay twice")
        # both requested at once, the first time the engine reached one of them
        assert [c.id for c in reply.status.approvals] == ["call_0_0", "call_0_2"]
        assert reply.status.waiting_on == "approval of pay call call_0_0, pay call call_0_2"
        decided = await agent.approve("call_0_2")  # the second first: decisions come in any order
        assert decided.pending == ("call_0_0",)
        reply = await agent.run()
        assert reply.status.status is TaskStatus.WAITING_APPROVAL and at.RUNS == []  # the first still waits
        await agent.approve("call_0_0")
        reply = await agent.run()
        assert reply.text == "done"
    assert at.RUNS == [("pay", {"amount": 1}), ("look", {"what": "sky"}), ("pay", {"amount": 2})]


async def test_after_the_first_of_two_is_approved_the_second_stays_pending() -> None:
    model = Seen(calls(call("pay", amount=1), call("pay", amount=2)), {"text": "done"})
    async with livecontext.open_agent(model=model, tools=[at.pay]) as agent:
        await agent.send("pay twice")
        await agent.approve("call_0_0")
        reply = await agent.run()
        assert reply.status.status is TaskStatus.WAITING_APPROVAL
        assert reply.status.approvals == (ToolCall("call_0_1", "pay", '{"amount": 2}'),)
        assert at.RUNS == [("pay", {"amount": 1})]


async def test_deciding_an_unknown_or_a_decided_call_or_with_bad_arguments_is_one_clear_error() -> None:
    async with livecontext.open_agent(model=Seen(calls(call("pay", amount=5)), {"text": "ok"}), tools=[at.pay]) as agent:
        await agent.send("pay 5")
        with pytest.raises(livecontext.UsageError, match=r"no pending approval for call id 'c9': the calls waiting are call_0_0"):
            await agent.approve("c9")
        with pytest.raises(livecontext.UsageError, match="edited arguments are not JSON"):
            await agent.approve("call_0_0", "{amount: 5")
        with pytest.raises(livecontext.UsageError, match="must be a JSON object"):
            await agent.approve("call_0_0", "[5]")
        await agent.deny("call_0_0", "no")
        with pytest.raises(livecontext.UsageError, match="call_0_0 of thread main is already denied"):
            await agent.approve("call_0_0")


async def test_a_policy_function_decides_per_call() -> None:
    model = Seen(calls(call("send_mail", to="bob"), call("send_mail", to="everyone")), {"text": "done"})
    async with livecontext.open_agent(model=model, tools=[at.send_mail], approval=at.big_mails) as agent:
        reply = await agent.send("mail")
        assert [c.id for c in reply.status.approvals] == ["call_0_1"]
        assert at.RUNS == [("send_mail", {"to": "bob"})]  # the first needed none: it ran


async def test_a_list_of_tool_names_makes_each_of_their_calls_need_approval() -> None:
    model = Seen(calls(call("look", what="sky"), call("send_mail", to="bob")), {"text": "done"})
    async with livecontext.open_agent(model=model, tools=[at.look, at.send_mail], approval=["send_mail"]) as agent:
        reply = await agent.send("mail")
        assert reply.status.waiting_on == "approval of send_mail call call_0_1"
        assert at.RUNS == [("look", {"what": "sky"})]


async def test_a_bad_approval_setting_is_one_clear_error() -> None:
    with pytest.raises(livecontext.UsageError, match="approval policy 'nowhere.at.all:f': cannot import"):
        async with livecontext.open_agent(model="echo", approval="nowhere.at.all:f"):
            pass
    with pytest.raises(livecontext.UsageError, match="approval must be a list of tool names"):
        async with livecontext.open_agent(model="echo", approval=5):  # type: ignore[arg-type]
            pass


async def test_a_resumed_thread_keeps_its_policy_function_by_import_path_and_its_names(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'db'}"
    turns = (calls(call("send_mail", to="everyone")), calls(call("send_mail", to="everyone"), call("look", what="sea")),
             {"text": "done"})
    tools = [at.send_mail, at.look]
    async with livecontext.open_agent(model=Seen(*turns), store=store, tools=tools, approval=at.big_mails) as agent:
        assert (await agent.send("mail")).status.waiting_on == "approval of send_mail call call_0_0"
    # reopened with no approval given: the recorded function decides again
    async with livecontext.open_agent(model=Seen(*turns), store=store, tools=tools) as agent:
        assert agent.changed == ()
        await agent.approve("call_0_0")
        assert (await agent.run()).status.waiting_on == "approval of send_mail call call_1_0"
    async with livecontext.open_agent(model=Seen(*turns), store=store, tools=tools, approval=["look"]) as agent:
        assert agent.changed == ("thread main: approval [tests.support.approval_tools:big_mails] -> [look] (approval=)",)
    # the names given last are the recorded ones now
    async with livecontext.open_agent(model=Seen(*turns), store=store, tools=tools) as agent:
        await agent.approve("call_1_0")
        reply = await agent.run()
        assert reply.status.waiting_on == "approval of look call call_1_1"
    assert at.RUNS == [("send_mail", {"to": "everyone"}), ("send_mail", {"to": "everyone"})]
