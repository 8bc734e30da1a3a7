"""The ``stable`` render policy: a context that only grows at its end between compactions."""

from __future__ import annotations

import random
from collections.abc import Sequence

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from livecontext.actors.history import ContextPolicy, RenderResult, StableRenderer
from livecontext.protocol.history import ChatMessage, HistoryEntry, ModelOutputEntry, Retention, Role, Shown
from livecontext.protocol.records import ContextCompacted
from livecontext.runtime import UsageError
from tests.support.agent_harness import ProbeApp, counter, open_agent
from tests.actors.history.test_render import SYSTEM, assert_no_orphans, inp, out, recount, results

WINDOWS = "[Window: probe]\nWINDOW-MARK"


class Thread:
    """A thread's entries as a history store holds them, grown one step at a time, and its
    calls rendered under the stable policy."""

    def __init__(self, task: str, budget: int, policy: ContextPolicy = ContextPolicy()) -> None:
        self.budget = budget
        self.renderer = StableRenderer(policy)
        self.entries: list[HistoryEntry] = [attrs.evolve(inp(1, task), retention=Retention.CRITICAL)]
        self.calls: list[RenderResult] = []
        self.records: list[tuple[ContextCompacted, list[HistoryEntry]]] = []
        """Each compaction's record, and the entries as they were when it was made."""

    @property
    def next_id(self) -> int:
        return len(self.entries) + 1

    def step(self, text: str, result: str) -> None:
        """The model's output with one tool call, and its result."""
        n = self.next_id
        output = out(n, text, calls=1)
        self.entries += [output, results(n + 1, output, result)]

    def render(self, windows: str = WINDOWS, *, commit: bool = True) -> RenderResult:
        c = counter()
        active = [e for e in self.entries if not getattr(e, "folded", False)]
        pinned = [i for i, e in enumerate(active) if e.retention is Retention.CRITICAL]
        planned = self.renderer.plan(
            self.entries, {e.id: i for i, e in enumerate(self.entries)}, active, [], self.budget,
            system_prompt=SYSTEM, system_tokens=c.count(SYSTEM), windows=windows,
            windows_tokens=c.count(windows) if windows else 0, tools_tokens=0, pinned=pinned, cache=None,
            count=c.count)
        if commit:
            if planned.compaction is not None:
                record, frame = planned.compaction
                self.records.append((record, list(self.entries)))
                self.renderer.keep(frame)
            self.calls.append(planned.result)
        return planned.result

    def fold(self, entry_id: str) -> None:
        at = next(i for i, e in enumerate(self.entries) if e.id == entry_id)
        self.entries[at] = attrs.evolve(self.entries[at], folded=True)  # type: ignore[call-arg]


def without_windows(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    assert messages[-1] == ChatMessage(Role.USER, WINDOWS)
    return list(messages[:-1])


def test_between_compactions_each_call_starts_with_everything_the_previous_call_sent_but_the_windows() -> None:
    thread = Thread("the task", 8000)
    for k in range(6):
        thread.step(f"step {k}", f"output of step {k}")
        thread.render()
    assert thread.renderer.compactions == 1  # the first call's: everything fits after it
    for before, now in zip(thread.calls, thread.calls[1:]):
        kept = without_windows(before.messages)
        assert list(now.messages[: len(kept)]) == kept
        assert len(now.messages) == len(before.messages) + 2  # the new output and its result, then the windows


def test_the_apps_windows_are_the_last_message_and_the_only_one_a_change_of_window_changes() -> None:
    thread = Thread("the task", 8000)
    thread.step("look", "there")
    first = thread.render()
    again = thread.render(WINDOWS + " changed")
    assert first.messages[-1].content == WINDOWS
    assert again.messages[-1] == ChatMessage(Role.USER, WINDOWS + " changed")
    assert again.messages[:-1] == first.messages[:-1]
    assert sum(WINDOWS in m.content for m in again.messages) == 1


def test_new_steps_are_sent_whole_and_stay_as_they_were_sent() -> None:
    thread = Thread("the task", 8000)
    thread.step("look", "a long output " * 40)
    thread.render()
    thread.step("again", "short")
    second = thread.render()
    tool_texts = [m.content for m in second.messages if m.role is Role.TOOL]
    assert tool_texts == ["[ok] " + "a long output " * 40, "[ok] short"]  # LIVE, not cut to RECENT
    assert [(s.first, s.last, s.shown) for s in second.spans[1:]] == [("e2", "e5", Shown.LIVE)]  # (e1: the task)


def test_a_call_that_would_not_fit_compacts_down_to_the_low_water_mark_and_later_calls_share_it() -> None:
    thread = Thread("the task", 1500, ContextPolicy(low_water=0.5))
    for k in range(30):
        thread.step(f"step {k}", f"output {k} " * 20)
        thread.render()
    assert thread.renderer.compactions > 1
    frames = 0
    for before, now in zip(thread.calls, thread.calls[1:]):
        assert now.tokens <= 1500
        kept = without_windows(before.messages)
        if list(now.messages[: len(kept)]) != kept:  # a compaction: it starts afresh, under the low-water mark
            frames += 1
            assert now.tokens <= 750 + counter().count(WINDOWS) + 4 + 1500 // 4
    assert frames == thread.renderer.compactions - 1


def test_a_recorded_compaction_rebuilds_the_frame_the_calls_after_it_were_sent() -> None:
    thread = Thread("the task", 1500)
    for k in range(12):
        thread.step(f"step {k}", f"output {k} " * 20)
        thread.render()
    (record, entries), c = thread.records[-1], counter()
    assert record.budget == 1500 and record.upto == entries[-1].id and 0 < record.target <= 1500
    rebuilt = StableRenderer(ContextPolicy())
    active = [e for e in entries if not getattr(e, "folded", False)]
    rebuilt.restore(record, active, [], system_prompt=SYSTEM, system_tokens=c.count(SYSTEM), tools_tokens=0,
                    pinned=[0], cache=None, count=c.count)
    assert rebuilt.frame == thread.renderer.frame


def test_a_render_that_only_looks_leaves_the_frame_for_the_next_call() -> None:
    thread = Thread("the task", 8000)
    thread.step("look", "there")
    call = thread.render()
    thread.step("more", "here")
    looked = thread.render(commit=False)
    again = thread.render(commit=False)
    assert looked == again and thread.renderer.compactions == 1
    assert list(looked.messages[: len(call.messages) - 1]) == list(call.messages[:-1])


def test_a_fold_waits_for_the_next_compaction_and_a_folded_step_is_still_sent_until_then() -> None:
    thread = Thread("the task", 8000)
    thread.step("look", "there")
    first = thread.render()
    thread.fold("e2")  # shown in the frame: the frame still shows it
    thread.step("more", "here")
    second = thread.render()
    assert list(second.messages[: len(first.messages) - 1]) == list(first.messages[:-1])
    thread.step("and more", "there too")
    thread.fold(thread.entries[-2].id)  # a step the frame never showed went into a recap: still sent
    thread.fold(thread.entries[-1].id)
    third = thread.render()
    assert thread.renderer.compactions == 1
    assert list(third.messages[: len(second.messages) - 1]) == list(second.messages[:-1])
    assert [m.content for m in third.messages[-3:-1]] == ["and more", "[ok] there too"]


def test_a_change_of_budget_compacts() -> None:
    thread = Thread("the task", 8000)
    thread.step("look", "there")
    thread.render()
    thread.budget = 6000
    thread.step("more", "here")
    thread.render()
    assert thread.renderer.compactions == 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.tuples(st.integers(1, 30), st.integers(1, 120)), min_size=1, max_size=40),
       budget=st.integers(900, 4000), low=st.sampled_from([0.3, 0.5, 0.8]))
def test_every_call_is_within_budget_with_the_task_and_the_latest_result_whole_and_no_orphan(
        sizes: list[tuple[int, int]], budget: int, low: float) -> None:
    thread = Thread("the task, pinned", budget, ContextPolicy(low_water=low))
    for k, (said, output) in enumerate(sizes):
        thread.step(f"thought {k} " * said, f"result {k} " * output)
        call = thread.render()
        assert recount(call.messages) <= call.tokens <= budget
        assert_no_orphans(call.messages)
        assert call.messages[1] == ChatMessage(Role.USER, "the task, pinned")
        assert call.messages[-2].content == f"[ok] {'result %d ' % k * output}"
        assert call.messages[-1].content == WINDOWS


@pytest.mark.parametrize("seed", range(12))
def test_a_call_that_goes_on_from_the_call_before_sends_what_one_made_afresh_would(seed: int) -> None:
    # steps, an output whose results come a call later, entries edited or folded after the
    # frame, windows that change: each call equals the same call by a renderer that keeps
    # nothing from the call before (the same frame, made afresh)
    rng = random.Random(seed)
    thread = Thread("the task", 2500)
    pending: ModelOutputEntry | None = None
    for _ in range(60):
        n, move = thread.next_id, rng.random()
        if pending is not None:
            thread.entries.append(results(n, pending, "r" * rng.randint(1, 300)))
            pending = None
        elif move < 0.45:
            thread.step(f"step {n}", "r" * rng.randint(1, 300))
        elif move < 0.6:
            pending = out(n, f"calls at {n}", calls=rng.randint(1, 2))
            thread.entries.append(pending)
        elif move < 0.7:
            thread.entries.append(inp(n, f"input {n}"))
        elif move < 0.8 and len(thread.entries) > 2:
            at = rng.randrange(1, len(thread.entries) - 1)
            edited = thread.entries[at]
            thread.entries[at] = attrs.evolve(edited, content=attrs.evolve(  # type: ignore[misc]
                edited.content, live=attrs.evolve(edited.content.live, text=f"edited {at}")))
        elif move < 0.9 and len(thread.entries) > 2:
            thread.fold(thread.entries[rng.randrange(1, len(thread.entries) - 1)].id)
        windows = rng.choice([WINDOWS, WINDOWS + "\nmore" * 40, ""])
        kept, thread.renderer = thread.renderer, StableRenderer(thread.renderer.policy)
        thread.renderer.frame = kept.frame
        afresh = thread.render(windows, commit=False)
        thread.renderer = kept
        assert thread.render(windows) == afresh


def test_the_policy_refuses_marks_it_cannot_keep() -> None:
    with pytest.raises(UsageError, match="unknown context policy 'fil': choose one of stable, fill"):
        ContextPolicy("fil")
    with pytest.raises(UsageError, match=r"low_water must be between 0.05 and 1 \(a share of the budget\), got 0"):
        ContextPolicy(low_water=0)
    with pytest.raises(UsageError, match=r"high_water must be between low_water \(0.5\) and 1, got 0.4"):
        ContextPolicy(low_water=0.5, high_water=0.4)


# -- through the history store and the engine -------------------------------------------------


async def test_an_agent_records_for_each_call_the_tokens_sent_and_the_prefix_shared_with_the_call_before() -> None:
    record = {"name": "record", "arguments": {"label": "a label"}}
    turns = [{"text": f"step {k}", "tool_calls": [record]} for k in range(5)] + [{"text": "done"}]
    async with open_agent(turns, inputs=["please record things"], apps=[ProbeApp()]) as h:
        await h.run_until_idle()
        outputs = [e for e in await h.entries() if isinstance(e, ModelOutputEntry)]
    assert len(outputs) == 6
    assert outputs[0].shared_tokens == 0  # the first call shares nothing
    for before, now in zip(outputs, outputs[1:]):
        # everything the call before sent but its windows, and the tools' schemas, are shared
        assert 0 < before.sent_tokens < now.sent_tokens
        assert before.sent_tokens - 40 < now.shared_tokens < now.sent_tokens
        assert now.usage.prompt_tokens == now.sent_tokens  # the scripted model reports none: the count sent


async def test_the_fill_policy_sends_the_windows_in_the_latest_observation() -> None:
    async with open_agent([{"text": "ok"}], inputs=["hello"], apps=[ProbeApp()],
                          context=ContextPolicy("fill")) as h:
        await h.step()
        rendered = await h.render(8000, WINDOWS)
    assert rendered.messages[-1].content == f"hello\n\n{WINDOWS}"
