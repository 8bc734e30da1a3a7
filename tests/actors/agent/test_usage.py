"""Which sub-agent threads a thread's usage adds: those its ``spawn_subagent`` calls named."""

from __future__ import annotations

import datetime as dt

from livecontext.actors.agent._usage import spawned_threads
from livecontext.protocol.history import ModelInputEntry, ModelOutputEntry, Retention, ToolCall
from livecontext.protocol.kernel import ActorId, thread_id_problem
from tests.support.agent_harness import counter

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def output(n: int, *calls: tuple[str, str]) -> ModelOutputEntry:
    return ModelOutputEntry(id=f"e{n}", revision=1, author=ActorId("engine", "p"), created_at=NOW,
                            retention=Retention.COMPRESSIBLE, content=counter().content("go", "go", "go"),
                            tool_calls=tuple(ToolCall(call_id, name, "{}") for call_id, name in calls))


def test_each_spawn_subagent_call_names_its_thread_once_in_the_order_of_the_calls() -> None:
    task = ModelInputEntry(id="e1", revision=1, author=ActorId("input", "p"), created_at=NOW,
                           retention=Retention.CRITICAL, content=counter().content("t", "t", "t"), text="t")
    entries = [task, output(2, ("call_b", "spawn_subagent"), ("c9", "notebook_replace")),
               output(3, ("call a/x", "spawn_subagent")),
               output(4, ("call_b", "spawn_subagent"))]  # (run again after a crash: the same sub-agent)
    assert spawned_threads("p", entries) == ["p/sub/call_b", "p/sub/call-a-x"]


def test_a_call_whose_thread_id_would_be_too_long_names_no_thread() -> None:
    parent = f"{'p' * 64}/sub/{'q' * 64}/sub/{'r' * 50}"  # (188 characters: its sub-agent's would be 201)
    assert thread_id_problem(parent, agent=True) is None
    assert spawned_threads(parent, [output(1, ("call_0_0", "spawn_subagent"))]) == []
    assert spawned_threads("p", [output(1, ("call_0_0", "spawn_subagent"))]) == ["p/sub/call_0_0"]
