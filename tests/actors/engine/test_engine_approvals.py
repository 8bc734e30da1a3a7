"""The engine's approval gate: a call that needs approval is requested once (with every other
call of its output that needs one) and the run ends there, a free-running engine included;
control tools never wait for approval; a decision lets the next run carry the calls out."""

from __future__ import annotations

import json

import pytest
import trio

from livecontext.actors.apps import FunctionTools
from livecontext.actors.engine import ApprovalPolicy
from livecontext.protocol.agent import IdleReason, Resume
from livecontext.protocol.history import DecideApproval, EngineState, TaskStatus, ToolCall
from livecontext.runtime.testing import actor_instance
from tests.support import approval_tools as at
from tests.support.agent_harness import ProbeModel, open_agent, scripted


def calls(*made: tuple[str, dict[str, object]]) -> dict[str, object]:
    return {"text": "", "tool_calls": [{"name": n, "arguments": json.dumps(a)} for n, a in made]}


@pytest.fixture(autouse=True)
def _no_runs() -> None:
    at.RUNS.clear()


async def test_a_free_running_engine_stops_at_the_request_and_does_not_spin() -> None:
    model = ProbeModel(scripted([calls(("pay", {"amount": 1}), ("pay", {"amount": 2})), {"text": "done"}]))
    async with open_agent(model=model, apps=[FunctionTools([at.pay])]) as h:
        await h.client.ask(h.agent.engine, Resume())
        await h.provide("pay")
        with trio.fail_after(10):  # (a spinning engine never lets every task block)
            await h.settle()
        logged = await h.logged()
        requested = [a.call.id for a in logged.task.approvals]
        assert requested == ["call_0_0", "call_0_1"]  # one record, for both calls
        assert (await h.status()).status is TaskStatus.WAITING_APPROVAL
        assert len(model.requests) == 1 and at.RUNS == []
        await h.client.ask(h.agent.history, DecideApproval("call_0_0", True))
        await h.client.ask(h.agent.history, DecideApproval("call_0_1", False, None, "once is enough"))
        idle = await h.run_until_idle()
        assert (idle.state, idle.reason) == (EngineState.WAITING_INPUT, IdleReason.NO_INPUT)
    assert at.RUNS == [("pay", {"amount": 1})]


async def test_a_run_stopped_for_approval_says_so_and_running_again_records_nothing_more() -> None:
    async with open_agent([calls(("pay", {"amount": 1}))], inputs=["pay"], apps=[FunctionTools([at.pay])]) as h:
        idle = await h.run_until_idle()
        assert (idle.state, idle.reason) == (EngineState.WAITING_TOOL_RESULTS, IdleReason.WAITING_APPROVAL)
        assert idle.reason_text == "waiting_approval: approval of pay call call_0_0"
        seq = (await h.logged()).seq
        again = await h.run_until_idle()
        assert (again.reason, again.steps) == (IdleReason.WAITING_APPROVAL, 0)
        assert (await h.logged()).seq == seq


async def test_control_tools_never_wait_for_approval_even_when_the_policy_says_every_call_does() -> None:
    turn = calls(("look", {"what": "sky"}), ("task_complete", {"result": "seen"}))
    async with open_agent([turn], inputs=["look"], apps=[FunctionTools([at.look])]) as h:
        actor_instance(h.agent.engine).approval = ApprovalPolicy.of(lambda call, spec: True)
        idle = await h.run_until_idle()
        assert idle.reason is IdleReason.WAITING_APPROVAL
        status = await h.status()
        assert status.approvals == (ToolCall("call_0_0", "look", '{"what": "sky"}'),)
        await h.client.ask(h.agent.history, DecideApproval("call_0_0", True))
        await h.run_until_idle()
        assert (await h.status()).status is TaskStatus.COMPLETED
        assert len((await h.logged()).task.approvals) == 0  # (cleared by the results entry)
    assert at.RUNS == [("look", {"what": "sky"})]


async def test_the_request_is_the_engines_record_and_the_decision_the_deciders() -> None:
    async with open_agent([calls(("pay", {"amount": 1}))], inputs=["pay"], apps=[FunctionTools([at.pay])]) as h:
        await h.run_until_idle()
        await h.client.ask(h.agent.history, DecideApproval("call_0_0", True, None, "", "ada"))
        async with await h.store.open_reader("t1") as reader:
            records = [r for r in await reader.read(1, await reader.last_seq())
                       if r.kind in ("ApprovalRequested", "ApprovalDecided")]
        assert [(r.kind, r.sender) for r in records] == [("ApprovalRequested", "engine/t1"),
                                                         ("ApprovalDecided", "client/test")]
