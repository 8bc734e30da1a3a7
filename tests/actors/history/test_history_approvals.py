"""The history store's approval records: a request names calls of the last output still to
run (once each), a decision needs the ``decide`` capability (a person's, never the engine's),
and each refusal is one line."""

from __future__ import annotations

import json

import pytest

from livecontext.actors.apps import FunctionTools
from livecontext.actors.history import HistoryConflictError
from livecontext.protocol.context import AccessDenied, Capability
from livecontext.protocol.history import DecideApproval, RecordApprovalRequest, ToolCall
from livecontext.protocol.kernel import ActorId
from livecontext.runtime import RemoteActorError
from tests.support import approval_tools as at
from tests.support.agent_harness import open_agent

PAY = {"text": "", "tool_calls": [{"name": "pay", "arguments": json.dumps({"amount": 1})}]}


async def test_a_client_without_the_decide_capability_is_denied_and_the_denial_audited() -> None:
    async with open_agent([PAY], inputs=["pay"], apps=[FunctionTools([at.pay])]) as h:
        await h.run_until_idle()
        engine_like = h.rt.client("engine-like", capabilities={Capability.APPEND, Capability.READ})
        denied = await engine_like.ask(h.agent.history, DecideApproval("call_0_0", True))
        assert denied == AccessDenied(ActorId("client", "engine-like"), Capability.DECIDE, "DecideApproval")
        assert (await h.logged()).task.approvals[0].pending


async def test_a_request_for_a_call_that_is_not_to_run_is_refused_and_a_repeated_one_writes_nothing() -> None:
    async with open_agent([PAY], inputs=["pay"], apps=[FunctionTools([at.pay])]) as h:
        await h.run_until_idle()
        seq = (await h.logged()).seq
        await h.client.ask(h.agent.history, RecordApprovalRequest((ToolCall("call_0_0", "pay", "{}"),)))
        assert (await h.logged()).seq == seq
        with pytest.raises(RemoteActorError) as caught:
            await h.client.ask(h.agent.history, RecordApprovalRequest((ToolCall("c7", "pay", "{}"),)))
        assert isinstance(caught.value.__cause__, HistoryConflictError)
        assert "cannot request an approval of c7 in thread t1: not a call of its last output still to run" in str(
            caught.value)


async def test_edited_arguments_go_with_an_approval_only() -> None:
    async with open_agent([PAY], inputs=["pay"], apps=[FunctionTools([at.pay])]) as h:
        await h.run_until_idle()
        with pytest.raises(RemoteActorError, match="edited arguments go with an approval, not a deny"):
            await h.client.ask(h.agent.history, DecideApproval("call_0_0", False, '{"amount": 2}', "no"))
