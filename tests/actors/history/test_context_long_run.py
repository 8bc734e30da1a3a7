"""A long run: 500 scripted turns under limits of 50 entries and 4,000 tokens, with a recap."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from livecontext.actors import AgentSettings, spawn_agent
from livecontext.actors.history import ContextPolicy, HistoryLimits, HistoryState
from livecontext.actors.recap import RecapSettings
from livecontext.actors.recap._layer import DATA_FACTOR
from livecontext.protocol.agent import BeforeModelCall, HistoryChanged, Idle, IdleReason, RunUntilIdle
from livecontext.protocol.context import EntriesFolded
from livecontext.runtime import open_runtime
from livecontext.runtime.persistence import open_store

from tests.support.context_world import (
    CONVERTER,
    COUNTER,
    agent_turns,
    check_folds,
    check_no_lost_entry,
    check_no_orphan_calls,
    decode,
    scripted,
)

TURNS = 501  # 167 inputs of 3 turns each
MAX_ENTRIES = 50
MAX_TOKENS = 4000
MAX_SUMMARY = 1200


@pytest.mark.parametrize("policy", ["stable", "fill"])
async def test_500_turns_stay_within_the_limits_and_every_fold_is_logged(policy: str) -> None:
    inputs = [f"task {i}: keep the notes tidy" for i in range(TURNS // 3)]
    model = scripted(agent_turns(len(inputs), words=60))
    settings = AgentSettings(
        thread_id="long", budget=8000, snapshot_every=200,
        limits=HistoryLimits(max_entries=MAX_ENTRIES, max_tokens=MAX_TOKENS),
        recap=RecapSettings(window=4, batch=4, max_summary_chars=MAX_SUMMARY), context=ContextPolicy(policy),
    )
    model_calls: list[BeforeModelCall] = []
    changes: list[HistoryChanged] = []
    store = await open_store("memory:")
    with trio.fail_after(60):
        async with store:
            log = await store.open_thread("long", owner="test")
            async with open_runtime() as rt:
                agent = await spawn_agent(rt, log, model, settings, converter=CONVERTER,
                                          counter=COUNTER, inputs=inputs)
                async with rt.open_subscription(agent.events, buffer=100_000) as events, \
                        rt.open_subscription(agent.history_events, buffer=100_000) as history:
                    idle = await rt.client("test").ask(agent.engine, RunUntilIdle(), timeout=None)
                    await trio.testing.wait_all_tasks_blocked()  # the maintainer's last fold, if one is under way
                    model_calls = [e.payload for e in _drain(events) if isinstance(e.payload, BeforeModelCall)]
                    changes = [e.payload for e in _drain(history) if isinstance(e.payload, HistoryChanged)]
            raw = await log.read(1)
            records = decode(raw)

    assert isinstance(idle, Idle) and idle.reason is IdleReason.NO_INPUT, idle
    model.inner.check_all_used()  # type: ignore[attr-defined]
    assert len(model_calls) == TURNS
    check_no_lost_entry("long", records, model, inputs)

    # within the limits at every change the store published, and at every model call
    assert [c.seq for c in changes] == sorted({c.seq for c in changes})
    published = {c.seq for c in changes}
    state = HistoryState("long")
    recap_sizes = []
    for seq, _, payload in records:
        state.apply(seq, payload)
        if seq in published:
            assert len(state.active) <= MAX_ENTRIES, f"{len(state.active)} active entries at seq {seq}"
            assert state.active_tokens <= MAX_TOKENS, f"{state.active_tokens} active tokens at seq {seq}"
        if isinstance(payload, EntriesFolded):
            recap_sizes.append(len(payload.recap.content.live.text))
    assert published == {seq for seq, _, _ in records if seq > 2}  # (seqs 1-2: the prompt and configuration, set at start)
    for call in model_calls:
        # fill renders the unfolded history alone; stable still sends what was folded since its
        # last compaction (the prefix stays), so its calls are bound by the budget
        assert call.tokens <= (MAX_TOKENS if policy == "fill" else call.budget), call
    for request in model.requests:
        check_no_orphan_calls(request.messages, f"request {request.call_index}")

    # the recap grows, then stays under its bound; every fold is in the log, by the maintainer
    folds = check_folds("long", records, folder="recap/long")
    assert folds == len(recap_sizes) > 50
    assert max(recap_sizes) <= MAX_SUMMARY
    assert recap_sizes[0] < recap_sizes[5] < max(recap_sizes)
    # full, and kept full (a merge of the oldest lines into a range line frees a quarter at most)
    assert min(recap_sizes[len(recap_sizes) // 2:]) > MAX_SUMMARY * 0.7
    assert len(state.active) < MAX_ENTRIES
    # a fold record names the recap it replaces instead of copying what that one covered, and
    # its data is bounded: its size does not grow with the thread (the log stays linear in the
    # run's length): the text twice (LIVE, RECENT), the data (JSON inside JSON: escaped)
    fold_sizes = [len(r.payload) for r in raw if r.kind == "EntriesFolded"]
    assert max(fold_sizes) < 2 * MAX_SUMMARY + 1.25 * DATA_FACTOR * (MAX_SUMMARY + 1) + 1500, max(fold_sizes)


def _drain(channel: trio.MemoryReceiveChannel) -> list:  # type: ignore[type-arg]
    out = []
    while True:
        try:
            out.append(channel.receive_nowait())
        except trio.WouldBlock:
            return out
