"""An agent on a VirtualClock under Trio's autojump MockClock: an hour of model latency and tool
delays passes in virtual time, its records are stamped with virtual times, and a second run
from the same seed writes the same records, byte for byte."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import trio
import trio.testing

import livecontext
from livecontext.protocol.history import ModelInputEntry, ModelOutputEntry
from livecontext.runtime import DEFAULT_EPOCH, VirtualClock
from livecontext.runtime.models import RetryPolicy, ScriptedModel
from livecontext.runtime.persistence import StoredRecord, open_store
from tests.support.systems import entries, records

HOUR = dt.timedelta(hours=1)


@livecontext.tool
async def work(seconds: int) -> str:
    """Work for ``seconds`` (a build, a test run)."""
    await trio.sleep(seconds)
    return f"worked {seconds} s"


def an_hour_of_work() -> list[dict[str, Any]]:
    """60 model calls of 2 s, each asking for a tool run of 58 s (the last 56 s), then a final
    answer of 2 s: 3600 s in all."""
    turns: list[dict[str, Any]] = [
        {"delay_s": 2, "tool_calls": [{"name": "work", "arguments": {"seconds": 58 if k < 59 else 56}}]}
        for k in range(60)]
    turns.append({"delay_s": 2, "text": "done"})
    return turns


async def run_for_an_hour(seed: int) -> list[StoredRecord]:
    model = ScriptedModel.from_turns(an_hour_of_work())
    store = await open_store("memory:")
    async with store:
        async with livecontext.open_agent(model=model, tools=[work], store=store, thread="t",
                                          clock=VirtualClock(seed=seed)) as agent:
            reply = await agent.send("work for an hour", max_steps=1000)
        assert reply.text == "done"
        model.check_all_used()
        return await records(store, "t")


async def test_an_hour_of_latency_and_tool_delays_is_stamped_in_virtual_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    found = await run_for_an_hour(seed=1)
    assert trio.current_time() == 3600.0
    assert found[0].sent_at == DEFAULT_EPOCH
    assert found[-1].sent_at == DEFAULT_EPOCH + HOUR
    assert [r.sent_at for r in found] == sorted(r.sent_at for r in found)
    assert found[-1].sent_mono_ns == 3600 * 10**9


async def test_each_model_output_is_stamped_its_latency_after_its_input(autojump_clock: trio.testing.MockClock) -> None:
    model = ScriptedModel.from_turns([{"delay_s": 2, "text": "hello"}])
    store = await open_store("memory:")
    async with store:
        async with livecontext.open_agent(model=model, store=store, thread="t", clock=VirtualClock()) as agent:
            await trio.sleep(60)
            await agent.send("hi")
        given, answered = [e for e in await entries(store, "t")
                           if isinstance(e, (ModelInputEntry, ModelOutputEntry))]
    assert given.created_at == DEFAULT_EPOCH + dt.timedelta(seconds=60)
    assert answered.created_at == DEFAULT_EPOCH + dt.timedelta(seconds=62)


def test_two_runs_from_the_same_seed_write_the_same_records_byte_for_byte() -> None:
    def run(seed: int) -> list[tuple[str, dt.datetime, int, str, str]]:
        found = trio.run(run_for_an_hour, seed, clock=trio.testing.MockClock(autojump_threshold=0))
        return [(r.sender, r.sent_at, r.sent_mono_ns, r.kind, r.payload) for r in found]

    first = run(5)
    assert len(first) > 240
    assert run(5) == first


async def test_a_retried_model_calls_backoff_passes_in_virtual_seconds_drawn_from_the_seed(
    autojump_clock: trio.testing.MockClock, tmp_path: Path,
) -> None:
    script = tmp_path / "flaky.json"
    script.write_text(json.dumps({"turns": [{"delay_s": 2, "text": "at last",
                                             "fail": {"error": "rate_limit", "times": 2}}]}))
    store = await open_store("memory:")
    async with store:
        async with livecontext.open_agent(model=f"scripted:{script}", store=store, thread="t",
                                          clock=VirtualClock(seed=9)) as agent:
            await agent.send("hi")
        given, answered = [e for e in await entries(store, "t")
                           if isinstance(e, (ModelInputEntry, ModelOutputEntry))]
    jitter = VirtualClock(seed=9).random("retry:t")  # the agent's model's retries draw from it
    backoff = RetryPolicy().delay_s(1, jitter) + RetryPolicy().delay_s(2, jitter)
    assert 0.75 <= backoff < 1.5  # (0.5 s then 1 s, each less up to half of it)
    waited = (answered.created_at - given.created_at).total_seconds()
    assert abs(waited - (backoff + 2)) < 1e-6  # the backoff, then the successful call's latency
