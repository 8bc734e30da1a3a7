"""``open_agent(store=..., thread=...)`` resumes a thread with the settings it recorded; a
keyword that changes one is logged and listed in ``Agent.changed``; a log written before
threads recorded their settings resumes with the defaults."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

import pytest

import livecontext
from livecontext.actors.agent._session import owner_string, recorded_config
from livecontext.actors.analyzers import AnalyzerSettings
from livecontext.actors.history import HistoryLimits
from livecontext.actors.recap import RecapSettings
from livecontext.protocol.records import RenderPolicy, ThreadConfigured, ThreadSettings
from livecontext.protocol.wire import make_converter
from livecontext.runtime.persistence import NewRecord, open_store

RECAP = RecapSettings("simple_extract", window=2, batch=1, max_summary_chars=900)
ANALYZERS = (AnalyzerSettings("usage", kind="usage"),)


async def test_a_thread_opened_again_with_no_settings_keeps_its_budget_recap_and_analyzers(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = f"sqlite:{tmp_path / 'lc.db'}"
    async with livecontext.open_agent(store=store, thread="t", budget=4000, recap=RECAP, analyzers=ANALYZERS,
                                      limits=HistoryLimits(max_entries=9)) as agent:
        await agent.send("hello")
    first = await recorded_config(store, "t")
    with caplog.at_level(logging.WARNING, logger="livecontext"):
        async with livecontext.open_agent(store=store, thread="t") as agent:
            assert agent.changed == ()
            await agent.send("again")
    assert caplog.records == []
    resumed = await recorded_config(store, "t")
    assert resumed == first and resumed is not None and resumed.budget == 4000
    assert resumed.settings is not None and resumed.settings.recap is not None
    assert resumed.settings.recap.window == 2 and [a.name for a in resumed.settings.analyzers] == ["usage"]


async def test_a_keyword_that_changes_a_recorded_setting_is_logged_listed_and_recorded(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = f"sqlite:{tmp_path / 'lc.db'}"
    async with livecontext.open_agent(store=store, thread="t", budget=4000, recap=RECAP):
        pass
    with caplog.at_level(logging.WARNING, logger="livecontext"):
        async with livecontext.open_agent(store=store, thread="t", budget=8000, recap=None) as agent:
            changed = agent.changed
    assert changed == ("thread t: budget 4000 -> 8000 (budget=)",
                       "thread t: recap simple_extract window=2 batch=1 max_summary_chars=900 -> none (recap=)")
    assert [r.getMessage() for r in caplog.records] == list(changed)
    resumed = await recorded_config(store, "t")
    assert resumed is not None and resumed.budget == 8000
    assert resumed.settings is not None and resumed.settings.recap is None


async def test_a_fork_opened_through_the_agents_store_keeps_the_settings(tmp_path: Path) -> None:
    async with livecontext.open_agent(store=f"sqlite:{tmp_path / 'lc.db'}", thread="t", budget=3000,
                                      lifecycle=False) as agent:
        await agent.send("hello")
        await agent.fork("copy")
        async with livecontext.open_agent(store=agent.store, thread="copy") as copy:
            assert copy.changed == ()
    config = await recorded_config(f"sqlite:{tmp_path / 'lc.db'}", "copy")
    assert config is not None and config.budget == 3000 and config.settings is not None
    assert config.settings.lifecycle is False


async def test_a_thread_recorded_before_threads_recorded_their_settings_resumes_with_the_defaults(
        tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'lc.db'}"
    old = make_converter().dump_message(ThreadConfigured(3000))
    del old["settings"], old["context"]  # (as a log written before these fields holds it)
    async with await open_store(url) as store:
        async with await store.open_thread("old", owner=owner_string("old")) as log:
            await log.append([NewRecord.encoding("history/old", dt.datetime.now(dt.UTC), 0, "ThreadConfigured", old)])
    assert await recorded_config(url, "old") == ThreadConfigured(3000)
    async with livecontext.open_agent(store=url, thread="old") as agent:
        assert agent.changed == ()
        reply = await agent.send("hello")
    assert reply.state.value == "WaitingInput"
    resumed = await recorded_config(url, "old")
    assert resumed is not None and resumed.budget == 3000  # (recorded: kept)
    assert resumed.settings == ThreadSettings() and resumed.context == RenderPolicy()  # (not recorded: defaults)
