"""A tool call's context (its idempotency key) and the side-effect options of ``@tool``."""

from __future__ import annotations

import json

import pytest
import trio

from livecontext import ToolContext, idempotency_key
from livecontext.actors.apps import App, FunctionTools, ToolDefinitionError, check_tool, describe_tools, invoke_tool, tool
from livecontext.protocol.history import ToolCall


@tool(side_effects=True)
def send(to: str, ctx: ToolContext) -> str:
    """Send a mail.

    Args:
        to: Whom to send it to.
    """
    return f"sent to {to} as {ctx.key} ({ctx.thread_id}/{ctx.call_id})"


def found(key: str) -> str | bool | None:
    return {"k-done": "sent earlier", "k-not": False}.get(key)


@tool(side_effects=True, check=found)
def mail(to: str) -> str:
    """Send a mail that can be looked up.

    Args:
        to: Whom to send it to.
    """
    return f"sent to {to}"


def test_the_key_is_a_pure_function_of_thread_output_and_call_so_a_restart_computes_it_again() -> None:
    key = idempotency_key("t", "e2", "call_0_0")
    assert key == idempotency_key("t", "e2", "call_0_0") == ToolContext.of("t", "e2", "call_0_0").key
    assert key == "lc-deecf6a20429b5ae2aa651773d41dcd8"  # pinned: a key must never change between versions
    assert len({key, idempotency_key("u", "e2", "call_0_0"), idempotency_key("t", "e2", "call_0_1"),
                idempotency_key("tc", "e2", "all_0_0"), idempotency_key("t", "e4", "call_0_0"),
                idempotency_key("t", "e", "2call_0_0")}) == 6


def test_two_outputs_whose_calls_share_an_id_give_them_two_keys() -> None:
    # (a server that numbers its calls afresh in every answer: call_0 each time)
    assert idempotency_key("t", "e2", "call_0") != idempotency_key("t", "e4", "call_0")


def test_a_tool_context_parameter_is_not_in_the_schema_the_model_sees() -> None:
    spec, = describe_tools(FunctionTools([send]))
    assert json.loads(spec.parameters_json)["properties"].keys() == {"to"}
    assert spec.side_effects and not spec.checked and not spec.idempotent


async def test_a_function_tool_is_given_the_context_of_its_call() -> None:
    call = ToolCall("call_3_0", "send", json.dumps({"to": "ann"}))
    outcome = await invoke_tool([FunctionTools([send])], call, ToolContext.of("t", "e2", "call_3_0"))
    assert outcome.live == f"sent to ann as {idempotency_key('t', 'e2', 'call_3_0')} (t/call_3_0)"


async def test_the_model_cannot_fill_the_context_parameter_itself() -> None:
    call = ToolCall("c", "send", json.dumps({"to": "ann", "ctx": {"key": "mine"}}))
    outcome = await invoke_tool([FunctionTools([send])], call, ToolContext.of("t", "e2", "c"))
    assert "unknown argument 'ctx'" in outcome.live


async def test_a_check_says_done_not_done_or_cannot_tell() -> None:
    apps, call = [FunctionTools([mail])], ToolCall("c", "mail", "{}")
    assert describe_tools(apps[0])[0].checked
    done = await check_tool(apps, call, ToolContext("k-done", "t", "e2", "c"))
    assert done is not None and not isinstance(done, bool) and done.live == "sent earlier"
    assert await check_tool(apps, call, ToolContext("k-not", "t", "e2", "c")) is False
    assert await check_tool(apps, call, ToolContext("k-what", "t", "e2", "c")) is None


def test_a_check_without_side_effects_is_refused_with_what_to_do() -> None:
    with pytest.raises(ToolDefinitionError, match=r"add side_effects=True"):
        tool(check=found)


class Payments(App):
    name = "payments"

    def __init__(self) -> None:
        self.done: dict[str, str] = {"k-paid": "receipt 7"}

    async def look_up(self, key: str) -> str | None:
        await trio.lowlevel.checkpoint()
        return self.done.get(key)

    @tool(side_effects=True, check=look_up)
    def pay(self, amount: int, ctx: ToolContext) -> str:
        """Pay.

        Args:
            amount: How much.
        """
        return f"paid {amount} with key {ctx.key}"


async def test_an_app_tool_takes_the_context_and_its_check_is_a_method_of_the_app() -> None:
    apps, call = [Payments()], ToolCall("c", "pay", json.dumps({"amount": 3}))
    spec, = describe_tools(apps[0])
    assert json.loads(spec.parameters_json)["properties"].keys() == {"amount"}
    assert spec.side_effects and spec.checked
    assert (await invoke_tool(apps, call, ToolContext.of("t", "e2", "c"))).live == f"paid 3 with key {idempotency_key('t', 'e2', 'c')}"
    found = await check_tool(apps, call, ToolContext("k-paid", "t", "e2", "c"))
    assert found is not None and not isinstance(found, bool) and found.live == "receipt 7"
    assert await check_tool(apps, call, ToolContext("k-other", "t", "e2", "c")) is None
