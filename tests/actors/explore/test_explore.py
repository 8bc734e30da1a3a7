"""Exploring a system's interleavings: a planted ordering bug found by a seed that reproduces it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from livecontext.protocol.history import ToolResultsEntry
from livecontext.actors.explore import ExploreError, explore_system, load_check, load_inputs, run_system_seed

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "explore"
BUGGY = EXAMPLE / "desk.toml"
FIXED = EXAMPLE / "desk-fixed.toml"


@pytest.fixture
def on_path() -> Iterator[None]:
    """The example's folder on sys.path (its apps and checks are imported from there)."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        yield
    finally:
        sys.path.remove(str(EXAMPLE))


@pytest.fixture
def every_question_answered(on_path: None):  # type: ignore[no-untyped-def]
    return load_check("checks:every_question_answered")


async def test_explore_finds_the_question_lost_when_two_asks_cross_within_200_seeds(
        every_question_answered) -> None:  # type: ignore[no-untyped-def]
    found = await explore_system(BUGGY, range(200), check=every_question_answered, stop_at_first_failure=True)

    failing = found.failures[0]
    assert "never taken by the oracle" in (failing.failure or "")
    assert found.runs[:-1] and all(r.ok for r in found.runs[:-1])  # some interleavings pass: only some cross


async def test_the_failing_seed_fails_the_same_way_ten_times_out_of_ten(every_question_answered) -> None:  # type: ignore[no-untyped-def]
    found = await explore_system(BUGGY, range(200), check=every_question_answered, stop_at_first_failure=True)
    failing = found.failures[0]

    replays = [await run_system_seed(BUGGY, failing.seed, check=every_question_answered) for _ in range(10)]

    assert all(r.failure == failing.failure for r in replays)
    assert all(r.trace == failing.trace for r in replays)


async def test_the_desk_that_queues_questions_passes_every_seed(every_question_answered) -> None:  # type: ignore[no-untyped-def]
    found = await explore_system(FIXED, range(20), check=every_question_answered)

    assert [r.seed for r in found.runs if not r.ok] == []
    assert [s for s, _ in found.groups()] == ["ok: alice no_input, bob no_input"]


async def test_seeds_give_different_delivery_orders_between_the_agents_and_one_seed_the_same(on_path: None) -> None:
    found = await explore_system(FIXED, range(4))
    again = await run_system_seed(FIXED, 3)

    assert found.distinct_traces == 4
    assert again.trace == found.runs[3].trace
    senders = {d.sender.split("/")[-1].split(".")[-1] for d in again.trace} | {
        d.recipient.split("/")[-1].split(".")[-1] for d in again.trace}
    assert {"alice", "bob", "oracle"} <= senders


async def test_a_model_error_is_injected_at_a_seeded_call_and_the_seed_repeats_it(on_path: None) -> None:
    found = await explore_system(FIXED, range(4), faults=["model"])
    fired = [r.outcome.faults for r in found.runs if r.outcome is not None]

    assert all(len(f) == 1 and "model error at model call" in f[0] for f in fired) and len(fired) == 4
    again = await run_system_seed(FIXED, 2, faults=["model"])
    assert again.outcome is not None and again.outcome.faults == found.runs[2].outcome.faults  # type: ignore[union-attr]
    assert again.trace == found.runs[2].trace


async def test_a_tool_crash_is_injected_at_a_seeded_tool_call_and_the_model_reads_it(on_path: None) -> None:
    run = await run_system_seed(FIXED, 1, faults=["tool"])

    assert run.outcome is not None
    [fired] = run.outcome.faults
    assert fired.startswith("tool crash at tool call")
    agent, tool = fired.split(" of ", 1)[1].rstrip(")").split(" (")
    results = [r for e in run.outcome.agents[agent].entries if isinstance(e, ToolResultsEntry) for r in e.results]
    assert any(r.name == tool and "raised _InjectedToolCrash" in r.content.live.text for r in results)
    again = await run_system_seed(FIXED, 1, faults=["tool"])
    assert again.outcome is not None and again.outcome.faults == run.outcome.faults and again.trace == run.trace


async def test_a_killed_system_is_opened_again_on_its_store_and_its_run_resumed(on_path: None) -> None:
    run = await run_system_seed(FIXED, 0, faults=["kill"])

    assert run.ok and run.outcome is not None and run.outcome.resumed
    assert "killed at model call" in run.outcome.faults[0]
    assert run.outcome.answers and all(a.reason == "no_input" for a in run.outcome.answers.values())
    # (the resumed run finished what the kill cut: both askers got their answer)
    assert {name: run.outcome.agents[name].status for name in ("alice", "bob")} == {
        "alice": "waiting_user", "bob": "waiting_user"}


async def test_a_check_that_returns_false_fails_the_seed_naming_the_check(on_path: None) -> None:
    def nobody_answers(outcome: object) -> bool:
        return False

    found = await explore_system(FIXED, range(1), check=nobody_answers)

    assert found.runs[0].failure == "nobody_answers returned False"


def test_bad_checks_inputs_and_faults_are_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ExploreError, match="give MODULE:FN"):
        load_check("checks")
    with pytest.raises(ExploreError, match="cannot import"):
        load_check("no_such_module_here:fn")
    bad = tmp_path / "inputs.json"
    bad.write_text('{"alice": "not a list"}', encoding="utf-8")
    with pytest.raises(ExploreError, match="agent name -> list of texts"):
        load_inputs(bad)
    good = tmp_path / "inputs.toml"
    good.write_text('alice = ["hello"]', encoding="utf-8")
    assert load_inputs(good) == {"alice": ["hello"]}


async def test_an_unknown_fault_is_refused() -> None:
    with pytest.raises(ExploreError, match="unknown fault 'disk'"):
        await explore_system(FIXED, range(1), faults=["disk"])
