"""The engine's five states and every transition of DESIGN.md's table, failure paths included."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from livecontext.protocol.agent import (
    AfterModelCall,
    AfterToolExecute,
    BeforeModelCall,
    BeforeToolExecute,
    IdleReason,
    ModelTextDelta,
    WaitingInput,
)
from livecontext.protocol.history import (
    EngineState,
    ModelInputEntry,
    ModelOutputEntry,
    Role,
    ToolResultsEntry,
    ToolStatus,
)
from livecontext.runtime.models import RetryPolicy, ScriptedModel
from tests.support.agent_harness import Probe, ProbeApp, ProbeModel, open_agent, scripted

S = EngineState


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": name, "arguments": arguments}


async def test_an_empty_history_waits_for_input_and_a_step_without_input_changes_nothing() -> None:
    async with open_agent([]) as h:
        assert (await h.tail()).state is S.WAITING_INPUT
        done = await h.step()
        assert (done.from_state, done.to_state, done.progressed, done.error) == (
            S.WAITING_INPUT, S.WAITING_INPUT, False, "")
        assert await h.entries() == ()
        await h.settle()
        assert len(h.of_type(WaitingInput)) == 1
        assert h.transitions() == []


async def test_input_moves_waiting_input_to_pending_input_and_records_a_model_input() -> None:
    async with open_agent([], inputs=["hello"]) as h:
        done = await h.step()
        assert (done.from_state, done.to_state, done.progressed) == (S.WAITING_INPUT, S.PENDING_INPUT, True)
        (entry,) = await h.entries()
        assert isinstance(entry, ModelInputEntry)
        assert entry.text == "hello"
        assert str(entry.author) == "engine/t1"
        await h.settle()
        assert h.transitions() == [("WaitingInput", "PendingInput")]


async def test_a_model_answer_without_tool_calls_moves_pending_input_back_to_waiting_input() -> None:
    async with open_agent([{"text": "hi there"}], inputs=["hello"]) as h:
        await h.step()
        done = await h.step()
        assert (done.from_state, done.to_state, done.progressed) == (S.PENDING_INPUT, S.WAITING_INPUT, True)
        entries = await h.entries()
        assert isinstance(entries[-1], ModelOutputEntry)
        assert entries[-1].content.live.text == "hi there"
        await h.settle()
        assert h.transitions() == [("WaitingInput", "PendingInput"), ("PendingInput", "WaitingInput")]
        (before,) = h.of_type(BeforeModelCall)
        (after,) = h.of_type(AfterModelCall)
        assert before.call_index == 0
        assert (after.entry_id, after.text, after.error) == (entries[-1].id, "hi there", "")


async def test_two_tool_calls_run_in_the_models_order_through_every_tool_state() -> None:
    probe = Probe()
    turns = [
        {"tool_calls": [call("record", label="first"), call("record", label="second")]},
        {"tool_calls": [call("record", label="third")]},
        {"text": "all recorded"},
    ]
    async with open_agent(turns, inputs=["go"], apps=[ProbeApp(probe)]) as h:
        expected = [
            (S.WAITING_INPUT, S.PENDING_INPUT),
            (S.PENDING_INPUT, S.WAITING_TOOL_RESULTS),
            (S.WAITING_TOOL_RESULTS, S.WAITING_TOOL_RESULTS),  # one of two results recorded
            (S.WAITING_TOOL_RESULTS, S.TOOL_RESULTS_READY),
            (S.TOOL_RESULTS_READY, S.PENDING_TOOL_RESULTS),
            (S.PENDING_TOOL_RESULTS, S.WAITING_TOOL_RESULTS),
            (S.WAITING_TOOL_RESULTS, S.TOOL_RESULTS_READY),
            (S.TOOL_RESULTS_READY, S.PENDING_TOOL_RESULTS),
            (S.PENDING_TOOL_RESULTS, S.WAITING_INPUT),
        ]
        for from_state, to_state in expected:
            done = await h.step()
            assert (done.from_state, done.to_state, done.progressed) == (from_state, to_state, True)
        assert probe.calls == ["first", "second", "third"]
        entries = await h.entries()
        assert [type(e).__name__ for e in entries] == [
            "ModelInputEntry", "ModelOutputEntry", "ToolResultsEntry",
            "ModelOutputEntry", "ToolResultsEntry", "ModelOutputEntry"]
        results = entries[2]
        assert isinstance(results, ToolResultsEntry)
        assert [(r.call_id, r.status, r.content.live.text) for r in results.results] == [
            ("call_0_0", ToolStatus.OK, "recorded first"), ("call_0_1", ToolStatus.OK, "recorded second")]
        await h.settle()
        assert h.transitions() == [(f.value, t.value) for f, t in expected if f is not t]
        assert [e.call_id for e in h.of_type(BeforeToolExecute)] == ["call_0_0", "call_0_1", "call_1_0"]
        assert [e.call_id for e in h.of_type(AfterToolExecute)] == ["call_0_0", "call_0_1", "call_1_0"]


async def test_the_model_sees_tool_results_right_after_its_tool_calls() -> None:
    model = ProbeModel(scripted([{"tool_calls": [call("record", label="x")]}, {"text": "ok"}]))
    async with open_agent(model=model, inputs=["go"], apps=[ProbeApp()]) as h:
        idle = await h.run_until_idle()
        assert idle.reason is IdleReason.NO_INPUT
    second = model.requests[1].messages
    assert [m.role for m in second[-3:]] == [Role.ASSISTANT, Role.TOOL, Role.USER]
    assert second[-3].tool_calls[0].id == second[-2].tool_call_id == "call_0_0"
    assert "PROBE-WINDOW" in second[-1].content
    assert [s.name for s in model.requests[0].tools] == [  # the app's, then the engine's control tools
        "record", "explode", "slow", "slow_once", "task_complete", "task_abandon", "output",
        "wait_user_response"]


async def test_a_failed_model_call_leaves_state_and_history_unchanged_and_a_later_step_succeeds() -> None:
    script = ScriptedModel.from_turns([{"text": "finally", "fail": {"error": "server", "times": 4}}])
    policy = RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.001)
    async with open_agent(model=scripted_with(script, policy), inputs=["hello"]) as h:
        await h.step()
        before = await h.entries()
        done = await h.step()
        assert (done.from_state, done.to_state, done.progressed) == (S.PENDING_INPUT, S.PENDING_INPUT, False)
        assert done.error.startswith("model call failed after 3 attempts: server: scripted failure 3 of 4")
        assert await h.entries() == before
        assert (await h.tail()).state is S.PENDING_INPUT
        await h.settle()
        failed = h.of_type(AfterModelCall)
        assert len(failed) == 1 and failed[0].entry_id == "" and "after 3 attempts" in failed[0].error
        assert h.transitions() == [("WaitingInput", "PendingInput")]

        done = await h.step()  # attempts 4 (fails) and 5 (succeeds)
        assert (done.to_state, done.progressed, done.error) == (S.WAITING_INPUT, True, "")
        assert script.attempts(0) == 5
        entries = await h.entries()
        assert len(entries) == 2 and entries[-1].content.live.text == "finally"


def scripted_with(script: ScriptedModel, policy: RetryPolicy) -> ProbeModel:
    from livecontext.runtime.models import RetryingModel

    return ProbeModel(RetryingModel(script, policy))


async def test_run_until_idle_stops_with_the_failure_when_the_model_call_fails() -> None:
    turns = [{"fail": {"error": "rate_limit", "times": 9}}]
    async with open_agent(turns, inputs=["hello"]) as h:
        idle = await h.run_until_idle()
        assert idle.state is S.PENDING_INPUT
        assert idle.steps == 1
        assert idle.reason_text.startswith("failed: model call failed after 3 attempts: rate_limit")


async def test_asking_past_the_end_of_the_script_fails_the_step_and_names_the_turn() -> None:
    async with open_agent([], inputs=["hello"]) as h:
        await h.step()
        done = await h.step()
        assert not done.progressed
        assert "turn 0" in done.error and "test-script" in done.error
        assert (await h.tail()).state is S.PENDING_INPUT


async def test_blank_input_is_ignored_and_not_recorded() -> None:
    async with open_agent([{"text": "ok"}], inputs=["   ", "\n\t", ""]) as h:
        done = await h.step()
        assert (done.to_state, done.progressed) == (S.WAITING_INPUT, False)
        assert await h.entries() == ()
        await h.provide("  ")
        await h.provide("real input")
        done = await h.step()
        assert done.to_state is S.PENDING_INPUT
        (entry,) = await h.entries()
        assert isinstance(entry, ModelInputEntry) and entry.text == "real input"


@pytest.mark.parametrize(
    ("tool_call", "message"),
    [
        ({"name": "no_such_tool", "arguments": {}},
         "unknown tool 'no_such_tool'; available tools: record, explode, slow, slow_once"),
        ({"name": "record", "arguments": "{bad"}, "arguments of record are not valid JSON"),
        ({"name": "record", "arguments": {"label": 5}}, "invalid arguments for record: argument 'label'"),
        ({"name": "record", "arguments": {"lable": "x"}}, "unknown argument 'lable'"),
        ({"name": "explode", "arguments": {"why": "boom"}}, "explode raised RuntimeError: boom"),
    ],
    ids=["unknown-tool", "malformed-json", "wrong-type", "unknown-argument", "tool-raises"],
)
async def test_a_bad_tool_call_becomes_a_failed_result_the_model_reads_and_the_engine_goes_on(
    tool_call: dict[str, object], message: str
) -> None:
    probe = Probe()
    model = ProbeModel(scripted([{"tool_calls": [tool_call, call("record", label="after")]},
                                 {"text": "I see the error"}]))
    async with open_agent(model=model, inputs=["go"], apps=[ProbeApp(probe)]) as h:
        idle = await h.run_until_idle()
        assert (idle.state, idle.reason) == (S.WAITING_INPUT, IdleReason.NO_INPUT)
        results = (await h.entries())[2]
        assert isinstance(results, ToolResultsEntry)
        failed, ok = results.results
        assert failed.status is ToolStatus.FAILED
        assert message in failed.content.live.text
        assert ok.status is ToolStatus.OK  # the next call still ran
        assert probe.calls == ["after"]
        await h.settle()
        assert [e.status for e in h.of_type(AfterToolExecute)] == [ToolStatus.FAILED, ToolStatus.OK]
    tool_messages = [m for m in model.requests[1].messages if m.role is Role.TOOL]
    assert message in tool_messages[0].content
    assert tool_messages[0].content.startswith("[failed] ")


async def test_run_until_idle_feeds_the_inputs_in_order_and_max_steps_stops_early() -> None:
    turns = [{"text": "one"}, {"text": "two"}]
    async with open_agent(turns, inputs=["a", "b"]) as h:
        idle = await h.run_until_idle(max_steps=3)
        assert (idle.state, idle.steps, idle.reason) == (S.PENDING_INPUT, 3, IdleReason.MAX_STEPS)
        idle = await h.run_until_idle()
        assert (idle.state, idle.steps, idle.reason) == (S.WAITING_INPUT, 1, IdleReason.NO_INPUT)
        texts = [e.content.live.text for e in await h.entries()]
        assert texts == ["a", "one", "b", "two"]


async def test_a_resumed_engine_runs_on_its_own_when_input_arrives_and_pause_stops_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from livecontext.protocol.agent import Pause, Resume

    async with open_agent([{"text": "one"}, {"text": "two"}]) as h:
        await h.client.ask(h.agent.engine, Resume())
        await h.provide("a")
        await h.settle()  # the engine answered "a", pulled again, found nothing and sleeps
        assert len(await h.entries()) == 2
        assert isinstance(h.events[-1], WaitingInput)
        await h.client.ask(h.agent.engine, Pause())
        await h.provide("b")
        await trio.sleep(60)  # (virtual time)
        assert len(await h.entries()) == 2  # paused: the input waits
        done = await h.step()
        assert done.to_state is S.PENDING_INPUT


async def test_a_budget_too_small_fails_the_step_with_a_clear_error_and_the_engine_keeps_answering() -> None:
    async with open_agent([{"text": "never"}], inputs=["hello"], budget=5) as h:
        await h.step()
        with trio.fail_after(5):
            done = await h.step()
        assert (done.to_state, done.progressed) == (S.PENDING_INPUT, False)
        assert "token budget 5 is too small" in done.error
        with trio.fail_after(5):
            idle = await h.run_until_idle()
        assert idle.reason_text.startswith("failed: ") and "raise --budget" in idle.reason_text
        assert len(await h.entries()) == 1


async def test_streamed_text_deltas_are_published_before_the_model_call_ends() -> None:
    from livecontext.protocol.agent import ModelTextDelta

    text = "a streamed answer in several pieces, word by word"
    async with open_agent([{"text": text}, {"text": text}], inputs=["a", "b"]) as h:
        await h.run_until_idle()
        await h.settle()
        kinds = [type(e).__name__ for e in h.events if isinstance(e, (ModelTextDelta, AfterModelCall))]
        first_end = kinds.index("AfterModelCall")
        assert kinds[:first_end] == ["ModelTextDelta"] * first_end and first_end > 1
        assert kinds[first_end + 1:].count("ModelTextDelta") == first_end
        deltas = "".join(e.text for e in h.of_type(ModelTextDelta))
        assert deltas == text * 2


async def test_a_failed_model_call_after_tool_results_leaves_pending_tool_results() -> None:
    turns = [{"tool_calls": [call("record", label="x")]}, {"fail": {"error": "server", "times": 9}}]
    async with open_agent(turns, inputs=["go"], apps=[ProbeApp()]) as h:
        idle = await h.run_until_idle()
        assert (idle.state, idle.steps) == (S.PENDING_TOOL_RESULTS, 4)
        assert idle.reason_text.startswith("failed: model call failed after 3 attempts: server")
        assert [type(e).__name__ for e in await h.entries()] == [
            "ModelInputEntry", "ModelOutputEntry", "ToolResultsEntry"]


async def test_an_engine_nobody_listens_to_takes_the_same_steps_and_a_later_listener_hears_them() -> None:
    turns = [{"tool_calls": [call("record", label="x")]}, {"text": "done"}, {"text": "again"}]
    async with open_agent(turns, inputs=["go"], apps=[ProbeApp()], listen=False) as h:
        idle = await h.run_until_idle()
        assert (idle.state, idle.steps, idle.reason) == (S.WAITING_INPUT, 5, IdleReason.NO_INPUT)
        assert [type(e).__name__ for e in await h.entries()] == [
            "ModelInputEntry", "ModelOutputEntry", "ToolResultsEntry", "ModelOutputEntry"]
        async with h.rt.open_subscription(h.agent.events) as events:
            await h.provide("more")
            idle = await h.run_until_idle()
            heard = []
            while True:
                try:
                    heard.append(events.receive_nowait().payload)
                except trio.WouldBlock:
                    break
        assert (idle.steps, idle.reason) == (2, IdleReason.NO_INPUT)
        assert [type(e).__name__ for e in heard if not isinstance(e, ModelTextDelta)] == [
            "WaitingInput", "StateTransition", "BeforeModelCall", "AfterModelCall", "StateTransition",
            "WaitingInput"]


async def test_a_render_slower_than_a_minute_does_not_fail_the_model_call(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a read from the agent's own history store has no deadline: a long history or a store
    # behind a busy disk makes the call wait, never fail (a Cancel or a stop still ends it)
    from livecontext.actors.history import HistoryStore

    render = HistoryStore.on_render

    async def slow_render(self: HistoryStore, msg: object) -> object:
        await trio.sleep(90)  # (virtual time)
        return await render(self, msg)  # type: ignore[arg-type]

    monkeypatch.setattr(HistoryStore, "on_render", slow_render)
    async with open_agent([{"text": "late but fine"}], inputs=["hello"]) as h:
        await h.step()
        done = await h.step(timeout=300)
        assert (done.from_state, done.to_state, done.progressed, done.error) == (
            S.PENDING_INPUT, S.WAITING_INPUT, True, "")
        assert [e.content.live.text for e in await h.entries()][-1] == "late but fine"
