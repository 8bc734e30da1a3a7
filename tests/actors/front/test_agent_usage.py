"""Usage through the front door: ``Agent.state()`` and ``Reply`` carry the thread's model
calls summed, across restarts, with its sub-agents' calls in its total."""

from __future__ import annotations

from pathlib import Path

import trio

import livecontext
from livecontext.actors import SubAgents
from livecontext.actors.apps import Notebook
from livecontext.protocol.history import ModelOutputEntry, Usage, UsageTotals
from tests.support.metered import Metered


def spawn(task: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "spawn_subagent", "arguments": {"task": task}}]}


PARENT = Usage(prompt_tokens=1000, completion_tokens=50, cached_tokens=800)
CHILD = Usage(prompt_tokens=300, completion_tokens=20, cached_tokens=100)


def totals(usage: Usage, calls: int) -> UsageTotals:
    return UsageTotals(usage.prompt_tokens * calls, usage.cached_tokens * calls, usage.completion_tokens * calls, calls)


async def test_reply_and_state_carry_the_reported_usage_summed_over_the_threads_calls() -> None:
    model = Metered([{"text": "one"}, {"text": "two"}, {"text": "three"}], PARENT)
    async with livecontext.open_agent(model=model, store="memory:") as agent:
        first = await agent.send("a")
        assert first.usage == totals(PARENT, 1)
        await agent.send("b")
        last = await agent.send("c")
        state = await agent.state()
    assert last.usage == state.usage == totals(PARENT, 3)


async def test_an_offline_model_records_the_rendered_count_of_each_call() -> None:
    async with livecontext.open_agent(model="echo", store="memory:") as agent:
        await agent.send("hello")
        outputs = [e for e in await agent.history() if isinstance(e, ModelOutputEntry)]
        state = await agent.state()
    (output,) = outputs
    assert output.usage.prompt_tokens == output.sent_tokens > 0
    assert output.usage.completion_tokens > 0 and output.usage.cached_tokens == 0
    assert output.usage.counted  # (ours, not a provider's: telemetry and the trace say so)
    assert state.usage == UsageTotals(output.usage.prompt_tokens, 0, output.usage.completion_tokens, 1)


async def test_usage_summed_over_a_thread_is_the_same_after_the_store_is_reopened(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'usage.db'}"
    async with livecontext.open_agent(model=Metered([{"text": "one"}, {"text": "two"}], PARENT),
                                      store=store, snapshot_every=3) as agent:
        await agent.send("a")
        await agent.send("b")
        before = (await agent.state()).usage
    assert before == totals(PARENT, 2)
    async with livecontext.open_agent(model=Metered([{"text": "x"}, {"text": "y"}, {"text": "three"}], CHILD),
                                      store=store) as agent:
        assert (await agent.state()).usage == before  # (rebuilt from the snapshot and the log)
        reply = await agent.send("c")
    assert reply.usage == before + totals(CHILD, 1)


async def test_a_sub_agents_usage_is_in_its_parents_total() -> None:
    parent = Metered([spawn("count to three"), {"text": "the parent carries on"}], PARENT)
    sub_script = Metered([{"text": "I will count", "tool_calls": [
        {"name": "notebook_replace", "arguments": {"old_text": "", "new_text": "1 2"}}]}, {"text": "1, 2, 3"}], CHILD)
    sub = SubAgents(lambda: sub_script)
    async with livecontext.open_agent(model=parent, store="memory:", apps=[Notebook(), sub]) as agent:
        reply = await agent.send("delegate it")
        state = await agent.state()
        store = agent.store
        assert reply.text == "the parent carries on"
        sub_thread = f"{agent.thread}/sub/call_0_0"
        assert await store.exists(sub_thread)
    assert reply.usage == state.usage == totals(PARENT, 2) + totals(CHILD, 2)


async def test_a_running_sub_agents_calls_so_far_are_in_its_parents_total() -> None:
    parent = Metered([spawn("count slowly"), {"text": "done"}], PARENT)
    sub_script = Metered([{"text": "counting", "tool_calls": [
        {"name": "notebook_replace", "arguments": {"old_text": "", "new_text": "1"}}]},
        {"text": "1, 2, 3", "delay_s": 30}], CHILD)
    sub = SubAgents(lambda: sub_script, timeout_s=60)
    async with livecontext.open_agent(model=parent, store="memory:", apps=[Notebook(), sub]) as agent:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.send, "delegate it")
            with trio.fail_after(10):
                while (await agent.state()).usage.model_calls < 2:
                    await trio.sleep(0.01)
            seen = (await agent.state()).usage  # (the sub-agent is waiting on its second call)
            nursery.cancel_scope.cancel()
    assert seen == totals(PARENT, 1) + totals(CHILD, 1)
