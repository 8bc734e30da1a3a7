"""The spawn_subagent tool: a whole sub-agent whose answer returns as a tool result."""

from __future__ import annotations

from livecontext.actors import SubAgents
from livecontext.actors.apps import Notebook
from livecontext.protocol import ActorId, ModelOutputEntry, ToolResultsEntry, ToolStatus
from livecontext.runtime.models import RetryingModel, RetryPolicy, ScriptedModel

from tests.actors.agent_harness import open_agent

SPAWN = [{"tool_calls": [{"name": "spawn_subagent", "arguments": {"task": "count to three"}}]},
         {"text": "the parent carries on"}]


def sub_model(turns: list[dict[str, object]]):  # type: ignore[no-untyped-def]
    return lambda: RetryingModel(ScriptedModel.from_turns(turns, name="sub"),
                                 RetryPolicy(max_attempts=1, base_delay_s=0.001, max_delay_s=0.001))


async def _results(turns_for_sub: list[dict[str, object]], **options: float) -> tuple[ToolStatus, str, str]:
    apps = [Notebook(), SubAgents(sub_model(turns_for_sub), **options)]  # type: ignore[arg-type]
    async with open_agent(SPAWN, inputs=["delegate it"], apps=apps) as h:
        idle = await h.run_until_idle(timeout=30)
        assert idle.reason == "no_input"
        entries = await h.entries()
    result = next(e for e in entries if isinstance(e, ToolResultsEntry)).results[0]
    answer = [e for e in entries if isinstance(e, ModelOutputEntry)][-1].content.live.text
    return result.status, result.content.live.text, answer


async def test_a_sub_agents_answer_comes_back_as_the_tool_result() -> None:
    status, content, answer = await _results([{"text": "one, two, three"}])
    assert status is ToolStatus.OK
    assert content == "one, two, three"
    assert answer == "the parent carries on"


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
        ids = [ActorId(kind, "t1.sub1") for kind in ("engine", "history", "app", "input")]
        assert all(h.rt.ref(i) for i in ids)  # they did run in this runtime
        assert not any(h.rt.is_running(i) for i in ids)
