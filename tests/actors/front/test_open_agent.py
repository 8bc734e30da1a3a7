"""The front door (issue 15, point 1): ``import livecontext`` and ``open_agent``, driven as a
user would, with scripted models and real stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

import livecontext
from livecontext import EngineState, Reply
from livecontext.protocol.agent import AgentOutput, BeforeModelCall, ModelTextDelta
from livecontext.protocol.history import ToolResultsEntry, ToolStatus
from livecontext.runtime import UsageError
from livecontext.runtime.models import ScriptedModel
from tests.support import function_tools as ft


def scripted(*turns: dict[str, object]) -> ScriptedModel:
    return ScriptedModel.from_turns(list(turns))


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": name, "arguments": json.dumps(arguments)}


def test_the_package_exports_exactly_the_front_door() -> None:
    assert sorted(livecontext.__all__) == sorted([
        "Agent", "AgentEvent", "AgentSpec", "AgentState", "AnalyzerSettings", "App", "AppDefinitionError", "AppStateError",
        "BlueprintError", "BudgetTooSmallError", "ContextPolicy", "EngineState", "HistoryLimits",
        "InputTooLargeError", "Level", "RecapSettings",
        "Reply", "Retention", "ToolContext", "ToolDefinitionError", "ToolFailure", "ToolOutcome", "UsageError",
        "open_agent", "tool", "AgentAnswer", "System", "open_system", "AgentStatus", "TaskStatus",
        "SpendLimits", "SpendLimitsError", "Price", "idempotency_key", "SyncAgent", "open_sync_agent",
        "run_agent", "McpServer", "McpServerError"])
    for name in livecontext.__all__:
        assert getattr(livecontext, name).__doc__, f"{name} has no docstring"


async def test_send_runs_until_the_agent_waits_and_gives_a_typed_reply() -> None:
    async with livecontext.open_agent(model="echo", store="memory:") as agent:
        reply = await agent.send("hello")
    assert reply == Reply("echo: hello", EngineState.WAITING_INPUT, reply.steps, "no_input",
                          livecontext.AgentStatus(livecontext.TaskStatus.WAITING_USER), reply.entry_id, reply.usage)
    assert reply.steps >= 1 and reply.entry_id
    assert reply.usage.model_calls == 1 and reply.usage.input_tokens > 0


async def test_a_sync_and_an_async_function_tool_are_called_and_bad_arguments_reach_the_model() -> None:
    model = scripted(
        {"tool_calls": [call("add", a=2, b=3), call("slow_echo", text="hi"), call("add", a="two", b=1)]},
        {"text": "five"})
    async with livecontext.open_agent(model=model, tools=[ft.add, ft.slow_echo]) as agent:
        reply = await agent.send("add 2 and 3")
        results = [e for e in await agent.history() if isinstance(e, ToolResultsEntry)]
    assert reply.text == "five"
    (entry,) = results
    assert [(r.status, r.content.live.text) for r in entry.results[:2]] == [(ToolStatus.OK, "5"), (ToolStatus.OK, "hi")]
    assert entry.results[2].status is ToolStatus.FAILED
    assert entry.results[2].content.live.text.startswith("invalid arguments for add: argument 'a'")


async def test_stream_yields_text_deltas_as_they_come_then_the_reply() -> None:
    async with livecontext.open_agent(model="echo") as agent:
        items = [item async for item in agent.stream("stream me")]
    deltas = "".join(i.text for i in items if isinstance(i, ModelTextDelta))
    assert deltas == "echo: stream me"
    assert isinstance(items[-1], Reply) and items[-1].text == "echo: stream me"
    assert sum(isinstance(i, Reply) for i in items) == 1


async def test_a_pinned_input_is_critical_and_state_history_and_render_read_the_thread() -> None:
    async with livecontext.open_agent(model="echo", budget=2000, pin_task=False) as agent:
        await agent.send("the task", pin=True)
        await agent.send("more")
        history = await agent.history()
        state = await agent.state()
        rendered = await agent.render()
    assert history[0].retention is livecontext.Retention.CRITICAL
    assert history[2].retention is livecontext.Retention.COMPRESSIBLE
    assert (state.thread, state.state, state.entries, state.model_outputs) == ("main", EngineState.WAITING_INPUT, 4, 2)
    assert set(state.apps) == {"notebook"}
    assert rendered.tokens <= 2000 and [m.content for m in rendered.messages][1] == "the task"


async def test_step_pause_and_resume_drive_the_engine_one_step_at_a_time() -> None:
    async with livecontext.open_agent(model="echo", inputs=["one"]) as agent:
        await agent.pause()
        took = await agent.step()  # the input is taken
        assert (took.from_state, took.to_state, took.progressed) == (
            EngineState.WAITING_INPUT, EngineState.PENDING_INPUT, True)
        assert (await agent.state()).model_outputs == 0
        answered = await agent.step()  # the model answers it
        assert (answered.from_state, answered.to_state) == (EngineState.PENDING_INPUT, EngineState.WAITING_INPUT)
        assert (await agent.state()).model_outputs == 1
        await agent.resume()


async def test_fork_copies_the_thread_which_opens_as_an_agent_of_its_own(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'lc.db'}"
    async with livecontext.open_agent(model="echo", store=url, thread="a") as agent:
        await agent.send("first")
        info = await agent.fork("b")
        await agent.send("second")
        store = agent.store
        assert info.thread_id == "b"
    async with livecontext.open_agent(model="echo", store=url, thread="b") as forked:
        assert [e.content.live.text for e in await forked.history()] == ["first", "echo: first"]


async def test_a_durable_thread_is_resumed_by_opening_it_again(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'lc.db'}"
    async with livecontext.open_agent(model="echo", store=url) as agent:
        await agent.send("remember me")
    async with livecontext.open_agent(model="echo", store=url) as agent:
        reply = await agent.send("and now")
        texts = [e.content.live.text for e in await agent.history()]
    assert reply.text == "echo: and now" and texts[:2] == ["remember me", "echo: remember me"]


async def test_a_blueprint_is_loaded_and_keywords_override_it(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('model = "echo"\nsystem_prompt = "From the file."\nbudget = 3000\n', encoding="utf-8")
    async with livecontext.open_agent(blueprint=path, system="From the keyword.") as agent:
        rendered = await agent.render()
    assert rendered.messages[0].content == "From the keyword."


async def test_bad_values_are_refused_saying_what_to_do() -> None:
    with pytest.raises(livecontext.UsageError, match="budget must be >= 1, got 0"):
        async with livecontext.open_agent(budget=0):
            pass
    with pytest.raises(livecontext.UsageError, match="invalid thread id 'a b'"):
        async with livecontext.open_agent(thread="a b"):
            pass
    with pytest.raises(livecontext.AppDefinitionError, match="app 'tests.support.function_tools:add' is a function"):
        async with livecontext.open_agent(apps=["tests.support.function_tools:add"]):
            pass
    with pytest.raises(livecontext.ToolDefinitionError, match="cannot import module 'nowhere_at_all'"):
        async with livecontext.open_agent(tools=["nowhere_at_all:f"]):
            pass


async def test_two_sends_at_once_run_one_after_the_other() -> None:
    replies: list[Reply] = []
    async with livecontext.open_agent(model="echo") as agent:
        async with trio.open_nursery() as nursery:
            async def send(text: str) -> None:
                replies.append(await agent.send(text))
            nursery.start_soon(send, "a")
            nursery.start_soon(send, "b")
        assert (await agent.state()).model_outputs == 2
    assert sorted(r.text for r in replies) == ["echo: a", "echo: b"]


async def test_a_resumed_thread_keeps_its_model_and_tools_when_none_are_given(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'lc.db'}"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "first"}, {"tool_calls": [call("add", a=1, b=2)]},
                                            {"text": "three"}]}), encoding="utf-8")
    async with livecontext.open_agent(model=f"scripted:{script}", tools=[ft.add], store=url) as agent:
        assert (await agent.send("one")).text == "first"
    async with livecontext.open_agent(store=url) as agent:  # no model, no tools: as recorded
        reply = await agent.send("two")
        results = [e for e in await agent.history() if isinstance(e, ToolResultsEntry)]
    assert reply.text == "three" and results[0].results[0].content.live.text == "3"


async def test_a_task_abandoned_gives_its_reason_as_the_reply_and_status_abandoned_in_state() -> None:
    model = scripted({"tool_calls": [call("task_abandon", reason="There is no /nope folder.")]},
                     {"text": "never asked for"})
    async with livecontext.open_agent(model=model) as agent:
        reply = await agent.send("rename the files in /nope")
        state = await agent.state()
    assert reply.text == "There is no /nope folder."
    assert reply.status == livecontext.AgentStatus(livecontext.TaskStatus.ABANDONED, reason="There is no /nope folder.")
    assert state.status == reply.status
    assert model.unused_turns() == (1,)  # the agent took no step after giving up


async def test_stream_yields_an_output_as_soon_as_it_is_shown_and_the_run_goes_on() -> None:
    model = scripted({"tool_calls": [call("output", text="Renamed 2 of 4 so far.")]}, {"text": "All 4 renamed."})
    async with livecontext.open_agent(model=model) as agent:
        items = [item async for item in agent.stream("rename them")]
    outputs = [i for i in items if isinstance(i, AgentOutput)]
    assert [o.text for o in outputs] == ["Renamed 2 of 4 so far."]
    second_call = [i for i in items if isinstance(i, BeforeModelCall)][1]
    assert items.index(outputs[0]) < items.index(second_call)  # shown before the next step
    assert isinstance(items[-1], Reply) and items[-1].text == "All 4 renamed."


async def test_a_task_completed_gives_its_result_as_the_reply_and_status() -> None:
    model = scripted({"tool_calls": [call("task_complete", result="All 3 files renamed.")]},
                     {"text": "never asked for"})
    async with livecontext.open_agent(model=model) as agent:
        reply = await agent.send("rename them")
        state = await agent.state()
    assert reply.text == "All 3 files renamed." and reply.entry_id == ""
    assert reply.status == livecontext.AgentStatus(livecontext.TaskStatus.COMPLETED, result="All 3 files renamed.")
    assert state.status == reply.status
    assert model.unused_turns() == (1,)  # the agent took no step after completing


async def test_a_question_to_the_user_is_the_reply() -> None:
    model = scripted({"tool_calls": [call("wait_user_response", question="Which folder?")]})
    async with livecontext.open_agent(model=model) as agent:
        reply = await agent.send("clean up")
    assert (reply.text, reply.status.status) == ("Which folder?", livecontext.TaskStatus.WAITING_USER)


def test_every_key_of_a_blueprint_has_a_keyword_of_open_agent() -> None:
    import inspect

    from livecontext.actors.blueprint._schema import SYSTEM_KEYS, BlueprintFile

    keyword = {"system_prompt": "system", "analyzers": "analyzers", "approval_policy": "approval"}
    taken = set(inspect.signature(livecontext.open_agent).parameters)
    missing = [k for k in BlueprintFile.model_fields if k not in SYSTEM_KEYS or k == "store"
               if keyword.get(k, k) not in taken]
    assert missing == []


async def test_lifecycle_false_offers_no_control_tools(tmp_path: Path) -> None:
    from livecontext.actors.agent._session import recorded_config

    for lifecycle, thread in ((True, "on"), (False, "off")):
        async with livecontext.open_agent(model="echo", lifecycle=lifecycle, store=f"sqlite:{tmp_path / 'lc.db'}",
                                          thread=thread, tools=[ft.add]) as agent:
            await agent.send("hi")
    on, off = [await recorded_config(f"sqlite:{tmp_path / 'lc.db'}", t) for t in ("on", "off")]
    assert on is not None and off is not None
    assert [t.name for t in on.tools] == ["notebook_replace", "notebook_replace_span", "add",
                                          "task_complete", "task_abandon", "output", "wait_user_response"]
    assert [t.name for t in off.tools] == ["notebook_replace", "notebook_replace_span", "add"]


async def test_a_stream_left_early_lets_the_run_finish_and_the_next_send_waits_for_it() -> None:
    model = scripted({"text": "first answer", "delay_s": 0.05}, {"text": "second answer"})
    async with livecontext.open_agent(model=model) as agent:
        async for item in agent.stream("one"):
            break  # the reader goes away at the first event
        reply = await agent.send("two")
        texts = [e.content.live.text for e in await agent.history()]
    assert reply.text == "second answer"
    assert texts == ["one", "first answer", "two", "second answer"]


async def test_an_agent_used_after_its_block_ended_refuses_in_one_line_saying_it_is_closed() -> None:
    async with livecontext.open_agent(model="echo") as agent:
        assert (await agent.send("hi")).text == "echo: hi"
    for call in (lambda: agent.send("again"), agent.history, agent.state, lambda: agent.fork("copy")):
        with pytest.raises(UsageError, match=r"^the agent of thread main is closed \(its async with block has "
                                             r"ended\): open one again with livecontext.open_agent\(\.\.\.\)$"):
            await call()
    with pytest.raises(UsageError, match="is closed"):
        async for _ in agent.stream("again"):
            pass
