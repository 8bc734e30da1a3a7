"""The trace page drawn from real traces (the browser tests in test_page_browser.py use
made-up ones): the offline blueprint's run, and a thread of 20,000 records written by a real
agent, in the headless chromium of ``conftest.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from livecontext.actors.trace import trace_json
from tests.support.trace_threads import make_long_thread
from tests.actors.trace._runs import run_blueprint, trace
from tests.actors.trace.conftest import TracePage


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = f"sqlite:{tmp_path_factory.mktemp('offline') / 'o.db'}"
    run_blueprint("offline.toml", store)
    return trace_json(trace(store, "lake-trip"))


def test_the_offline_runs_page_shows_its_actors_states_and_a_calls_context(page: TracePage,
                                                                          offline: dict[str, Any]) -> None:
    page.open(offline)
    heads = sorted(page.testid("actor"), key=lambda head: head.rect["x"])
    assert [head.get_attribute("data-actor") for head in heads] == [a["id"] for a in offline["actors"]]
    went = {item.get_attribute("data-state") for item in page.testid("state-legend-item")
            if "absent" not in (item.get_attribute("class") or "")}
    assert went == {s["state"] for s in offline["states"]}
    listed = {int(row.get_attribute("data-n")): row for row in page.testid("model-call")}  # (those in view)
    call = offline["model_calls"][0]
    listed[call["n"]].click()
    assert page.testid("context-output")[0].get_attribute("textContent") == offline["texts"][call["output"]]
    assert f"{call['tokens']:,} of {call['budget']:,}" in page.testid("details")[0].text


def test_a_real_thread_of_20000_records_is_drawn(page: TracePage, tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'long.db'}"
    assert make_long_thread(store) >= 20_000
    data = trace_json(trace(store, "long"))
    page.open(data, "long")
    drawn_at = page.js("return window.traceReadyAt")
    # (how long it takes is benchmarks/bench_trace.py's: a time bound here fails under load)
    assert isinstance(drawn_at, (int, float)) and drawn_at > 0
