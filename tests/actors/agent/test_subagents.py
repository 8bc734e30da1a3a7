"""The spawn_subagent tool: a whole sub-agent whose answer returns as a tool result."""

from __future__ import annotations

from livecontext.actors import AgentSettings, SubAgents, spawn_agent
from livecontext.actors.apps import Notebook
import json

from livecontext.protocol.agent import IdleReason, RunUntilIdle
from livecontext.protocol.history import HistoryEntry, ModelInputEntry, ModelOutputEntry, ToolResultsEntry, ToolStatus
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.records import EntryAppended, ToolResultsAppended
from livecontext.protocol.wire import make_converter
from livecontext.runtime.models import RetryingModel, RetryPolicy, ScriptedModel
from livecontext.runtime.persistence import StoredRecord

from tests.support.agent_harness import AgentHarness, counter, open_agent

SPAWN = [{"tool_calls": [{"name": "spawn_subagent", "arguments": {"task": "count to three"}}]},
         {"text": "the parent carries on"}]


def sub_model(turns: list[dict[str, object]]):  # type: ignore[no-untyped-def]
    return lambda: RetryingModel(ScriptedModel.from_turns(turns, name="sub"),
                                 RetryPolicy(max_attempts=1, base_delay_s=0.001, max_delay_s=0.001))


async def _results(turns_for_sub: list[dict[str, object]], **options: float) -> tuple[ToolStatus, str, str]:
    apps = [Notebook(), SubAgents(sub_model(turns_for_sub), **options)]  # type: ignore[arg-type]
    async with open_agent(SPAWN, inputs=["delegate it"], apps=apps) as h:
        idle = await h.run_until_idle(timeout=30)
        assert idle.reason is IdleReason.NO_INPUT
        entries = await h.entries()
    result = next(e for e in entries if isinstance(e, ToolResultsEntry)).results[0]
    answer = [e for e in entries if isinstance(e, ModelOutputEntry)][-1].content.live.text
    return result.status, result.content.live.text, answer


async def test_a_sub_agents_answer_comes_back_as_the_tool_result() -> None:
    status, content, answer = await _results([{"text": "one, two, three"}])
    assert status is ToolStatus.OK
    assert content == "one, two, three"
    assert answer == "the parent carries on"


async def test_a_sub_agent_that_completes_its_task_gives_its_result_as_the_answer() -> None:
    status, content, _ = await _results([
        {"text": "working on it", "tool_calls": [{"name": "task_complete", "arguments": {"result": "1, 2, 3"}}]}])
    assert (status, content) == (ToolStatus.OK, "1, 2, 3")


async def test_a_failing_sub_agent_gives_a_failed_result_and_the_parent_carries_on() -> None:
    status, content, answer = await _results([{"fail": {"error": "server", "times": 5}}])
    assert status is ToolStatus.FAILED
    assert "failed" in content and "server" in content
    assert answer == "the parent carries on"


async def test_a_sub_agent_that_takes_too_long_gives_a_failed_result() -> None:
    status, content, answer = await _results([{"text": "too late", "delay_s": 30}], timeout_s=0.2)
    assert status is ToolStatus.FAILED
    assert "timed out after 0.2 s" in content
    assert answer == "the parent carries on"


async def test_the_sub_agents_actors_are_stopped_once_it_answered() -> None:
    apps = [Notebook(), SubAgents(sub_model([{"text": "done"}]))]
    async with open_agent(SPAWN, inputs=["delegate it"], apps=apps) as h:
        await h.run_until_idle(timeout=30)
        ids = [ActorId(kind, "t1/sub/call_0_0") for kind in ("engine", "history", "app", "input")]
        assert all(h.rt.ref(i) for i in ids)  # they did run in this runtime
        assert not any(h.rt.is_running(i) for i in ids)


async def test_a_sub_agents_thread_lives_in_the_parents_store_named_after_the_call() -> None:
    apps = [Notebook(), SubAgents(sub_model([{"text": "one, two, three"}]))]
    async with open_agent(SPAWN, inputs=["delegate it"], apps=apps) as h:
        await h.run_until_idle(timeout=30)
        assert [t.thread_id for t in await h.store.threads()] == ["t1", "t1/sub/call_0_0"]
        reader = await h.store.open_reader("t1/sub/call_0_0")
        async with reader:
            records = await reader.read()
    senders = {r.sender for r in records}
    assert "engine/t1/sub/call_0_0" in senders  # its records name the sub-agent, and so its parent
    entries = await _entries_of(records)
    assert [type(e).__name__ for e in entries] == ["ModelInputEntry", "ModelOutputEntry"]
    assert entries[0].content.live.text == "count to three"


async def test_a_call_run_again_resumes_its_sub_agents_thread_instead_of_starting_over() -> None:
    """What a parent resumed after a crash does: the interrupted call runs again (the tool is
    idempotent) and finds the thread its first run left, mid-task."""
    turns = [{"tool_calls": [{"name": "notebook_replace", "arguments": {"old_text": "", "new_text": "1"}}]},
             {"text": "one"}]
    apps = [Notebook(), SubAgents(sub_model(turns))]
    async with open_agent(SPAWN, inputs=["delegate it"], apps=apps) as h:
        sub = "t1/sub/call_0_0"
        async with await h.store.open_thread(sub, owner="an earlier run") as log:  # as a crash left it
            agent = await spawn_agent(h.rt, log, sub_model(turns)(), AgentSettings(thread_id=sub),
                                      converter=make_converter(), counter=counter(), inputs=["count to three"])
            await h.client.ask(agent.engine, RunUntilIdle(2))  # the input and the first model call
            for ref in (agent.engine, agent.input, agent.apps, agent.history):
                await h.rt.stop(ref)
        await h.run_until_idle(timeout=30)
        reader = await h.store.open_reader(sub)
        async with reader:
            entries = await _entries_of(await reader.read())
        status, content = await _first_result(h)
    inputs = [e for e in entries if isinstance(e, ModelInputEntry)]
    assert [e.text for e in inputs] == ["count to three"]  # the task was not fed twice
    assert entries[-1].content.live.text == "one"
    assert status is ToolStatus.OK and content == "one"


async def _entries_of(records: list[StoredRecord]) -> list[HistoryEntry]:
    converter = make_converter()
    out: list[HistoryEntry] = []
    for record in records:
        message = converter.load_message(json.loads(record.payload))
        if isinstance(message, EntryAppended):
            out.append(message.entry)
        elif isinstance(message, ToolResultsAppended):
            out.append(message.entry)
    return out


async def _first_result(h: AgentHarness) -> tuple[ToolStatus, str]:
    result = next(e for e in await h.entries() if isinstance(e, ToolResultsEntry)).results[0]
    return result.status, result.content.live.text


async def test_a_sub_agents_app_hosted_outside_spawn_agent_says_in_one_line_that_it_cannot_spawn() -> None:
    from livecontext.actors.agent import AppHost
    from livecontext.actors.agent._agent import APP_HOST_CAPABILITIES
    from livecontext.protocol.agent import InvokeTool, ToolInvoked
    from livecontext.protocol.history import ToolCall

    async with open_agent(apps=[Notebook()]) as h:
        await h.rt.stop(h.agent.apps)
        apps = [SubAgents(sub_model([{"text": "never"}]), store=h.store)]  # (given a store, not a spawn)
        host = await h.rt.spawn(lambda: AppHost(apps, h.agent.history.id, counter()), h.agent.apps.id,
                                capabilities=APP_HOST_CAPABILITIES)
        got = await h.client.ask(host, InvokeTool(ToolCall("c1", "spawn_subagent", json.dumps({"task": "count"}))))
    assert isinstance(got, ToolInvoked)
    assert got.result.status is ToolStatus.FAILED
    assert got.result.content.live.text == ("sub-agents are not configured in this agent "
                                            "(it was not spawned by spawn_agent)")
