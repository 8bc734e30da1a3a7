"""The task lifecycle (seed note 003): the control tools, and the status an agent reports."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from livecontext.actors.apps import App, ToolOutcome, tool
from livecontext.actors.engine import ToolNameClashError
from livecontext.protocol.agent import AfterToolExecute, AgentStatus, IdleReason, Pause
from livecontext.protocol.history import EngineState, Role, TaskStatus, ToolResultsEntry, ToolStatus
from livecontext.runtime.models import RetryingModel, RetryPolicy, ScriptedModel
from tests.support.agent_harness import AgentHarness, ProbeApp, ProbeModel, open_agent, scripted

S = EngineState
SLOW = 30.0


def call(name: str, arguments: Any, text: str = "") -> dict[str, Any]:
    """A scripted model turn that calls one tool."""
    return {"text": text, "tool_calls": [{"name": name, "arguments": arguments}]}


TASK_DONE = call("task_complete", {"result": "3 files renamed"})
ASK = call("wait_user_response", {"question": "Which folder?"})


def tool_names(model: ProbeModel, request: int = 0) -> list[str]:
    return [spec.name for spec in model.requests[request].tools]


async def last_result_text(h: AgentHarness) -> tuple[ToolStatus, str]:
    results = (await h.entries())[-1]
    assert isinstance(results, ToolResultsEntry)
    (result,) = results.results
    return result.status, result.content.live.text


async def test_the_control_tools_are_offered_beside_the_apps_tools_by_default() -> None:
    model = ProbeModel(scripted([{"text": "hi"}]))
    async with open_agent(model=model, inputs=["hello"]) as h:
        await h.run_until_idle()
    assert tool_names(model) == ["notebook_replace", "notebook_replace_span", "task_complete", "task_abandon", "output",
                                 "wait_user_response"]
    task_complete = model.requests[0].tools[2]
    assert '"required":["result"]' in task_complete.parameters_json


async def test_task_complete_gives_status_completed_with_the_result() -> None:
    model = ProbeModel(scripted([TASK_DONE, {"text": "never said"}]))
    async with open_agent(model=model, inputs=["rename the files"]) as h:
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)  # a new thread awaits its task
        idle = await h.run_until_idle()
        assert (idle.state, idle.reason) == (S.WAITING_INPUT, IdleReason.NO_INPUT)
        assert await h.status() == AgentStatus(TaskStatus.COMPLETED, result="3 files renamed")
        status, text = await last_result_text(h)
        assert status is ToolStatus.OK and "3 files renamed" in text
        await h.settle()
        (after,) = h.of_type(AfterToolExecute)
        assert after.gist == "task complete: 3 files renamed"  # what run's transcript shows
    assert len(model.requests) == 1


async def test_a_completed_agent_takes_no_step_until_new_input_arrives_which_makes_it_active() -> None:
    model = ProbeModel(scripted([TASK_DONE, {"text": "folders done"}]))
    async with open_agent(model=model, inputs=["rename the files"]) as h:
        await h.run_until_idle()
        for _ in range(3):
            done = await h.step()
            assert (done.from_state, done.to_state, done.progressed) == (S.WAITING_INPUT, S.WAITING_INPUT, False)
        idle = await h.run_until_idle()
        assert (idle.steps, idle.reason) == (0, IdleReason.NO_INPUT)
        assert len(model.requests) == 1  # the second scripted reply was never asked for
        await h.provide("now the folders")
        done = await h.step()
        assert done.to_state is S.PENDING_INPUT
        assert await h.status() == AgentStatus(TaskStatus.ACTIVE)
        await h.run_until_idle()
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)  # answered without a control tool
    assert len(model.requests) == 2
    seen = [m for m in model.requests[1].messages if not m.content.startswith("[Window: ")]  # (the apps' last)
    assert [m.role for m in seen[-3:]] == [Role.ASSISTANT, Role.TOOL, Role.USER]
    assert "Task complete" in seen[-2].content and seen[-1].content.startswith("now the folders")


async def test_a_completed_agent_left_running_on_its_own_does_not_call_the_model_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from livecontext.protocol.agent import Resume

    model = ProbeModel(scripted([TASK_DONE, {"text": "never said"}]))
    async with open_agent(model=model, inputs=["rename the files"]) as h:
        await h.client.ask(h.agent.engine, Resume())
        await h.settle()
        assert (await h.status()).status is TaskStatus.COMPLETED
        await trio.sleep(60)  # (virtual time)
        await h.settle()
        assert len(model.requests) == 1
        assert (await h.tail()).state is S.WAITING_INPUT


async def test_wait_user_response_gives_waiting_user_with_the_question_and_the_answer_comes_as_input() -> None:
    model = ProbeModel(scripted([ASK, {"text": "cleaning /tmp"}]))
    async with open_agent(model=model, inputs=["clean up"]) as h:
        idle = await h.run_until_idle()
        assert (idle.state, idle.reason) == (S.WAITING_INPUT, IdleReason.NO_INPUT)
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER, question="Which folder?")
        assert len(model.requests) == 1
        await h.settle()
        assert h.of_type(AfterToolExecute)[0].gist == "asked the user: Which folder?"
        await h.provide("/tmp")
        await h.run_until_idle()
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)  # the question is answered
    seen = [m for m in model.requests[1].messages if not m.content.startswith("[Window: ")]  # (the apps' last)
    assert "Which folder?" in seen[-2].content and seen[-1].content.startswith("/tmp")


async def test_a_control_tool_ends_the_turn_once_every_call_of_the_output_has_its_result() -> None:
    turn = {"text": "", "tool_calls": [{"name": "task_complete", "arguments": {"result": "done"}},
                                       {"name": "record", "arguments": {"label": "after"}}]}
    model = ProbeModel(scripted([turn, {"text": "never said"}]))
    async with open_agent(model=model, inputs=["go"], apps=[ProbeApp()]) as h:
        await h.step()
        await h.step()  # the output
        await h.step()  # task_complete's result: the record call is still to run
        assert (await h.tail()).state is S.WAITING_TOOL_RESULTS
        assert await h.status() == AgentStatus(TaskStatus.ACTIVE)
        await h.run_until_idle()
        assert await h.status() == AgentStatus(TaskStatus.COMPLETED, result="done")
        results = (await h.entries())[-1]
        assert isinstance(results, ToolResultsEntry)
        assert [r.status for r in results.results] == [ToolStatus.OK, ToolStatus.OK]
    assert len(model.requests) == 1


async def test_with_lifecycle_off_the_tools_are_not_offered_and_a_call_fails_as_an_unknown_tool() -> None:
    model = ProbeModel(scripted([TASK_DONE, {"text": "carrying on"}]))
    async with open_agent(model=model, inputs=["go"], lifecycle=False) as h:
        await h.step()
        await h.step()
        await h.step()  # the call, answered by the app host
        results = await h.entries()
        await h.run_until_idle()
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)  # not completed
        config = (await h.logged()).config
    assert tool_names(model) == ["notebook_replace", "notebook_replace_span"]
    assert [s.name for s in config.tools] == ["notebook_replace", "notebook_replace_span"]  # nor counted
    assert len(model.requests) == 2  # the model was called again, to read the failure
    tool_message = model.requests[1].messages[-2]
    assert tool_message.role is Role.TOOL
    assert tool_message.content.startswith("[failed] unknown tool 'task_complete'; available tools: "
                                           "notebook_replace, notebook_replace_span")
    assert len(results) == 2  # (the result was recorded, not yet appended, after three steps)


@pytest.mark.parametrize(("name", "arguments", "says"), [
    ("task_complete", {}, "invalid arguments for task_complete: argument 'result' is missing; "
                          'call task_complete({"result": "..."})'),
    ("task_complete", {"result": 5}, "invalid arguments for task_complete: argument 'result' must be a "
                                     "string, got a number"),
    ("task_complete", {"result": "  "}, "invalid arguments for task_complete: argument 'result' is empty"),
    ("task_complete", {"result": "x", "score": 1},
     "invalid arguments for task_complete: unknown argument 'score' (task_complete takes result)"),
    ("task_complete", "[1, 2]", 'arguments of task_complete must be a JSON object ({"result": ...}), '
                                "got an array"),
    ("task_complete", "{not json", "arguments of task_complete are not valid JSON: "),
    ("wait_user_response", {"text": "which?"},
     "invalid arguments for wait_user_response: unknown argument 'text' (wait_user_response takes question)"),
])
async def test_a_control_tool_with_bad_arguments_gives_a_failed_result_the_model_reads_and_the_task_goes_on(
        name: str, arguments: Any, says: str) -> None:
    model = ProbeModel(scripted([call(name, arguments), {"text": "let me fix that"}]))
    async with open_agent(model=model, inputs=["go"]) as h:
        for _ in range(4):  # input, output, the call's result, the results entry
            await h.step()
        status, text = await last_result_text(h)
        assert status is ToolStatus.FAILED and text.startswith(says)
        assert await h.status() == AgentStatus(TaskStatus.ACTIVE)
        assert (await h.tail()).state is S.PENDING_TOOL_RESULTS  # the model is called again
        await h.run_until_idle()
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)
    assert says in model.requests[1].messages[-2].content


class Finisher(App):
    """An app with a tool of its own named ``task_complete``."""

    name = "finisher"

    def view(self) -> str:
        return ""

    @tool
    def task_complete(self, result: str) -> ToolOutcome:
        """Finish.

        Args:
            result: What came of it.
        """
        return ToolOutcome.ok(result)


async def test_an_app_tool_named_like_a_control_tool_is_a_clear_error_while_the_lifecycle_is_on() -> None:
    clash = pytest.RaisesExc(ToolNameClashError, match="an app offers a tool named 'task_complete', which is a "
                                                       r"control tool of the engine; .* \(lifecycle = false\)")
    with pytest.RaisesGroup(clash, flatten_subgroups=True):  # (raised inside the test's runtime)
        async with open_agent([], apps=[Finisher()]):
            pass
    model = ProbeModel(scripted([TASK_DONE, {"text": "ok"}]))
    async with open_agent(model=model, inputs=["go"], apps=[Finisher()], lifecycle=False) as h:
        await h.run_until_idle()
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)  # the app's tool ran
        assert (await h.entries())[2].results[0].content.live.text == "3 files renamed"  # type: ignore[attr-defined]


# -- paused and failed -----------------------------------------------------------------------------


async def test_a_pause_with_work_left_gives_status_paused_until_the_next_step() -> None:
    model = ProbeModel(scripted([call("record", {"label": "a"}), {"text": "done"}]))
    model.gate = trio.Event()
    async with open_agent(model=model, inputs=["go"], apps=[ProbeApp()]) as h:
        async with trio.open_nursery() as nursery:
            idles = []

            async def run() -> None:
                idles.append(await h.run_until_idle(timeout=SLOW))

            nursery.start_soon(run)
            await model.started.wait()
            await h.client.ask(h.agent.engine, Pause())
            model.gate.set()
        (idle,) = idles
        assert (idle.state, idle.reason) == (S.WAITING_TOOL_RESULTS, IdleReason.PAUSED)
        assert await h.status() == AgentStatus(TaskStatus.PAUSED)  # said before the run's answer came
        await h.step()
        assert await h.status() == AgentStatus(TaskStatus.ACTIVE)
        await h.run_until_idle()
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)


async def test_a_pause_of_an_idle_engine_with_work_left_gives_status_paused() -> None:
    async with open_agent([{"text": "hi"}], inputs=["hello"]) as h:
        await h.step()  # the input: a model call is next, and nobody runs the engine
        assert await h.status() == AgentStatus(TaskStatus.ACTIVE)
        await h.client.ask(h.agent.engine, Pause())
        await h.settle()  # the status is recorded by the engine's own task
        assert await h.status() == AgentStatus(TaskStatus.PAUSED)


async def test_a_pause_of_an_agent_waiting_for_input_changes_nothing_in_its_log() -> None:
    async with open_agent([TASK_DONE], inputs=["go"]) as h:
        await h.run_until_idle()
        seq = (await h.tail()).entries, (await h.logged()).seq
        await h.client.ask(h.agent.engine, Pause())
        await h.step()  # (the runner has recorded what it had to, if anything)
        assert ((await h.tail()).entries, (await h.logged()).seq) == seq
        assert await h.status() == AgentStatus(TaskStatus.COMPLETED, result="3 files renamed")


async def test_a_cancel_during_a_model_call_gives_status_paused() -> None:
    model = ProbeModel(scripted([{"text": "too late", "delay_s": SLOW}]))
    async with open_agent(model=model, inputs=["hello"]) as h:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(h.run_until_idle, None, SLOW)
            await model.started.wait()
            await h.cancel()
        assert (await h.tail()).state is S.PENDING_INPUT
        assert await h.status() == AgentStatus(TaskStatus.PAUSED)


async def test_a_failed_step_gives_status_failed_with_its_error_until_a_step_succeeds() -> None:
    script = ScriptedModel.from_turns([{"text": "finally", "fail": {"error": "server", "times": 3}}])
    model = RetryingModel(script, RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.001))
    async with open_agent(model=model, inputs=["hello"]) as h:
        idle = await h.run_until_idle()
        assert idle.reason_text.startswith("failed: model call failed after 3 attempts")
        status = await h.status()
        assert status.status is TaskStatus.FAILED and status.error == idle.error
        assert (await h.tail()).state is S.PENDING_INPUT  # the state did not change
        await h.run_until_idle()  # attempt 4 succeeds
        assert await h.status() == AgentStatus(TaskStatus.WAITING_USER)
