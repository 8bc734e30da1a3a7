"""On resume, a side-effecting call found started but unrecorded is resolved by its tool's
``check(key)``: done (its result recorded), not done (run now, once), or unknown (the model is
told so, with the key); a check that fails counts as unknown. Nothing is run twice.

In process: "the crash" is the record the engine writes just before it invokes such a tool
(``RecordToolStarted``) with nothing after it, as tests/durability/test_resume.py does.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import ClassVar

import pytest

from livecontext import ToolContext, idempotency_key
from livecontext.actors.agent._session import run_until_idle
from livecontext.actors.apps import App, ToolOutcome, tool
from livecontext.protocol.agent import RecordToolStarted
from livecontext.protocol.history import ModelOutputEntry, ToolStatus
from livecontext.runtime.testing import actor_instance

from tests.durability.test_resume import committed, results, session, tail


class Bank(App):
    """Payments by key; ``answer`` is what its check says of any key."""

    name = "bank"
    paid: ClassVar[list[str]] = []
    answer: ClassVar[object] = None
    reachable: ClassVar[threading.Event] = threading.Event()
    """Set to let a check that waits for the bank ("hang") go on."""

    def look_up(self, key: str) -> object:
        if Bank.answer == "raise":
            raise ConnectionError("bank unreachable")
        if Bank.answer == "hang":  # a sync check that blocks (a look-up over a dead connection)
            Bank.reachable.wait()
            return True
        return Bank.answer

    @tool(side_effects=True, check=look_up)
    def pay(self, amount: int, ctx: ToolContext) -> ToolOutcome:
        """Pay.

        Args:
            amount: How much.
        """
        Bank.paid.append(ctx.key)
        return ToolOutcome.ok(f"paid {amount}")


TURNS = [{"text": "paying", "tool_calls": [{"name": "pay", "arguments": {"amount": 5}}]}, {"text": "done"}]
KEY = idempotency_key("t", "e2", "call_0_0")


async def resumed_after_a_crash_mid_call(url: str, answer: object,
                                         tool_timeout_s: float | None = None) -> tuple[ToolStatus, str]:
    Bank.paid.clear()
    Bank.answer = answer
    async with session(url, TURNS, apps=[Bank()]) as (s, _):
        await run_until_idle(s, 2)  # the input, then the model's output with the call
        last = (await tail(s)).last
        assert isinstance(last, ModelOutputEntry)
        call = last.tool_calls[0]
        await s.rt.client("crash").ask(s.agent.history, RecordToolStarted(call.id, call.name))
    async with session(url, TURNS, apps=[Bank()]) as (s, _):
        if tool_timeout_s is not None:
            actor_instance(s.agent.engine).tool_timeout_s = tool_timeout_s
        await run_until_idle(s, None)
    state = await committed(url)
    [result] = results(state)
    assert state.started == {}
    return result.status, result.content.live.text


@pytest.mark.parametrize(("found", "recorded"), [("receipt 9", "receipt 9"),
                                                 (True, "done (its check found the effect done)")])
async def test_a_check_that_finds_the_effect_done_records_it_done_without_running_the_call(
        tmp_path: Path, found: object, recorded: str) -> None:
    status, text = await resumed_after_a_crash_mid_call(f"sqlite:{tmp_path / 'db'}", found)
    assert Bank.paid == []
    assert (status, text) == (ToolStatus.OK, recorded)


async def test_a_check_that_finds_the_effect_not_done_runs_the_call_once_now(tmp_path: Path) -> None:
    status, text = await resumed_after_a_crash_mid_call(f"sqlite:{tmp_path / 'db'}", False)
    assert Bank.paid == [KEY]
    assert (status, text) == (ToolStatus.OK, "paid 5")


async def test_a_check_that_cannot_tell_leaves_the_outcome_unknown_with_the_key(tmp_path: Path) -> None:
    status, text = await resumed_after_a_crash_mid_call(f"sqlite:{tmp_path / 'db'}", None)
    assert Bank.paid == []
    assert status is ToolStatus.INTERRUPTED and text.startswith("outcome unknown") and KEY in text


async def test_a_check_that_fails_is_reported_with_the_key_and_the_call_is_not_run(tmp_path: Path) -> None:
    status, text = await resumed_after_a_crash_mid_call(f"sqlite:{tmp_path / 'db'}", "raise")
    assert Bank.paid == []
    assert status is ToolStatus.FAILED
    assert text == f"pay's check raised ConnectionError: bank unreachable; the outcome of the call (key {KEY}) is unknown"


async def test_a_check_slower_than_the_tool_timeout_is_cancelled_and_the_outcome_reported_unknown(
        tmp_path: Path) -> None:
    Bank.reachable.clear()
    try:
        status, text = await resumed_after_a_crash_mid_call(f"sqlite:{tmp_path / 'db'}", "hang", tool_timeout_s=0.2)
    finally:
        Bank.reachable.set()  # (the abandoned worker thread ends)
    assert Bank.paid == []
    assert status is ToolStatus.FAILED  # the step went on: a result is recorded, not a failed step
    assert text == (f"pay's check did not answer within 0.2 s and was cancelled; "
                    f"the outcome of the call (key {KEY}) is unknown")
