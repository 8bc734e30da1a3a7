"""Checkpoint and fork a whole system: every record of a system's threads carries a system seq;
a fork at any system seq is a consistent cut of every thread, and resumed, it ends as the
original did (a message delivered once, a question asked once)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from livecontext.actors import open_system
from livecontext.actors.agent._format import apps_json
from livecontext.actors.system._messaging import message_key
from livecontext.actors.system._system_log import (
    SystemExistsError,
    SystemNotFoundError,
    SystemSeqPastEndError,
    fork_system,
    read_declaration,
)
from livecontext.actors.blueprint import SystemBlueprint, load_system_blueprint
from livecontext.protocol.agent import NotificationPosted
from livecontext.protocol.history import ModelInputEntry, ModelOutputEntry
from livecontext.protocol.system import SystemDeclared, SystemMember
from livecontext.protocol.wire import make_converter
from livecontext.runtime.persistence import EventStore, StoredRecord, open_store

from tests.support.systems import AGENTS, NOTE, TASK, call, entries, payloads, records, transcript, write_team

async def system_transcripts(store: EventStore, system: str) -> dict[str, list[tuple[Any, ...]]]:
    return {name: transcript(await entries(store, f"{system}.{name}")) for name in AGENTS}


def same_records(found: Sequence[StoredRecord]) -> list[tuple[int, int | None, str, str]]:
    return [(r.seq, r.system_seq, r.kind, r.payload) for r in found]


async def run_original(bp: SystemBlueprint, url: str) -> tuple[int, dict[str, str]]:
    """Run the team to its end; its last system seq and its apps' texts."""
    async with open_system(bp, store=url) as system:
        ran = await system.run_inputs()
        assert ran.answers["planner"].text == "The plan is in my notebook."
        planner = (await system.status()).agents[0]
        return system.clock.last, apps_json(planner.app_histories, planner.apps)


def check_consistent(store_records: dict[str, list[StoredRecord]]) -> int:
    """Every message received in these threads was sent in them: each keyed notification's
    sending tool call is in its sender's thread. Returns how many were checked."""
    calls = {name: {c.id for _, m in payloads(found) for c in _calls(m)} for name, found in store_records.items()}
    checked = 0
    for found in store_records.values():
        for _, m in payloads(found):
            if isinstance(m, NotificationPosted) and m.notification.key is not None:
                sender, _, call_id = m.notification.key.partition(":")
                assert call_id in calls[sender], f"{m.notification.key} received, never sent"
                checked += 1
    return checked


def _calls(message: object) -> tuple[Any, ...]:
    entry = getattr(message, "entry", None)
    return entry.tool_calls if isinstance(entry, ModelOutputEntry) else ()


async def test_every_record_of_a_system_carries_a_system_seq_that_orders_each_message_after_its_sending_call(
        tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 's.db'}"
    end, _ = await run_original(write_team(tmp_path), url)
    async with await open_store(url) as store:
        found = {name: await records(store, f"team.{name}") for name in AGENTS}
        system_log = await records(store, "system:team")
    stamps = [r.system_seq for thread in [system_log, *found.values()] for r in thread]
    assert sorted(stamps) == list(range(1, end + 1))  # (one process, no failed append: no gap)
    for thread in found.values():
        assert [r.system_seq for r in thread] == sorted(r.system_seq for r in thread)  # type: ignore[type-var]
    sent = {(name, c.id): r.system_seq for name, thread in found.items() for r, (_, m) in zip(thread, payloads(thread))
            for c in _calls(m)}
    received = [(m.notification.key, r.system_seq) for thread in found.values()
                for r, (_, m) in zip(thread, payloads(thread)) if isinstance(m, NotificationPosted)]
    assert len(received) == 4  # the message and the three questions
    for key, at in received:
        sender, _, call_id = str(key).partition(":")
        assert sent[sender, call_id] < at  # type: ignore[operator]


async def test_a_system_forked_at_any_system_seq_holds_the_original_up_to_the_cut_and_resumed_ends_as_it(
        tmp_path: Path) -> None:
    bp = write_team(tmp_path)
    url = f"sqlite:{tmp_path / 's.db'}"
    end, apps = await run_original(bp, url)
    async with await open_store(url) as store:
        original = {name: await records(store, f"team.{name}") for name in AGENTS}
        expected = await system_transcripts(store, "team")
        runs = {kind: r.system_seq for r in await records(store, "system:team")
                for kind in (r.kind,) if kind in ("InputsGiven", "InputsDone")}
    given_at, done_at = runs["InputsGiven"], runs["InputsDone"]
    assert given_at is not None and done_at == end  # (the run is done once all is)
    converter = make_converter()
    for at in range(end + 1):
        fork = f"cut{at}"
        async with await open_store(url) as store:
            made = await fork_system(store, "team", at, fork)
            forked = {name: await records(store, f"{fork}.{name}") for name in AGENTS}
            declared = await read_declaration(store, converter, fork)
        assert declared == SystemDeclared(fork, tuple(SystemMember(n, f"{fork}.{n}") for n in AGENTS), "team", at)
        # up to the cut: each thread's records stamped at or before it, as the original has them
        for name in AGENTS:
            kept = [r for r in original[name] if r.system_seq is not None and r.system_seq <= at]
            assert same_records(forked[name]) == same_records(kept), (at, name)
        assert [t.cut for t in made.threads] == [len(forked[n]) for n in AGENTS]
        check_consistent(forked)
        # run again as the original was run: the run going on at the cut is resumed (a cut
        # before it: the run starts; after it was done: no new input, nothing left to do)
        async with open_system(bp, store=url, name=fork) as system:
            ran = await system.run_inputs() if at < done_at else await system.run_inputs({})
            assert ran.resumed == (given_at <= at < done_at), at
            assert ran.held == ({"planner": (TASK,), "scribe": (NOTE,)} if ran.resumed else {}), at
            assert all(a.reason == "no_input" for a in ran.answers.values()), (at, ran.answers)
            planner = (await system.status()).agents[0]
            assert apps_json(planner.app_histories, planner.apps) == apps, at
            assert await system_transcripts(system.store, fork) == expected, at


async def test_a_cut_in_the_middle_of_a_question_leaves_it_asked_once_in_the_fork(tmp_path: Path) -> None:
    bp = write_team(tmp_path)
    url = f"sqlite:{tmp_path / 's.db'}"
    await run_original(bp, url)
    async with await open_store(url) as store:
        researcher = await records(store, "team.researcher")
        # the cut: the planner's question is posted to the researcher, which has not read it yet
        (posted,) = [r for r, (_, m) in zip(researcher, payloads(researcher)) if isinstance(m, NotificationPosted)]
        assert posted.system_seq is not None
        await fork_system(store, "team", posted.system_seq, "mid")
    async with open_system(bp, store=url, name="mid") as system:
        await system.run_inputs({})
        inputs = [e for e in await entries(system.store, "mid.researcher") if isinstance(e, ModelInputEntry)]
        notes = [m for _, m in payloads(await records(system.store, "mid.researcher"))
                 if isinstance(m, NotificationPosted)]
    assert [e.text for e in inputs] == ["Answer planner's question (the notification below); your reply is sent "
                                        "back to planner."]
    assert [n.notification.key for n in notes] == [message_key("planner", "call_1_0")]


async def test_forking_an_unknown_system_past_its_end_or_into_an_existing_one_is_one_line_and_writes_nothing(
        tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 's.db'}"
    end, _ = await run_original(write_team(tmp_path), url)
    async with await open_store(url) as store:
        await fork_system(store, "team", 3, "taken")
        before = [(t.thread_id, t.last_seq) for t in await store.threads()]
        with pytest.raises(SystemNotFoundError, match=rf"^no system named 'nope' in {url} \(its log would be thread "
                                                      rf"system:nope\); `livecontext threads --store {url}` lists"):
            await fork_system(store, "nope", 1, "x")
        with pytest.raises(SystemSeqPastEndError, match=rf"^--at {end + 1} is past the end of system team: its last "
                                                         rf"system seq is {end} \("):
            await fork_system(store, "team", end + 1, "x")
        with pytest.raises(SystemExistsError, match=rf"^system 'taken' exists already in {url}; fork into a new name$"):
            await fork_system(store, "team", 3, "taken")
        async with await store.open_thread("other.critic", owner="t"):
            pass
        with pytest.raises(SystemExistsError, match=r"^thread 'other.critic', which system 'other' would get, exists"):
            await fork_system(store, "team", 3, "other")
        assert sorted((t.thread_id, t.last_seq) for t in await store.threads()) == sorted([*before, ("other.critic", 0)])


async def test_a_sub_agents_records_are_the_systems_too_and_a_fork_copies_its_thread_under_the_new_agent(
        tmp_path: Path) -> None:
    (tmp_path / "lead.json").write_text(json.dumps({"turns": [
        call("spawn_subagent", task="Count to two."), {"text": "The sub-agent counted."}]}), encoding="utf-8")
    (tmp_path / "sub.json").write_text(json.dumps({"turns": [{"text": "one, two"}]}), encoding="utf-8")
    (tmp_path / "lead.toml").write_text(f"""system = "team"

[[agents]]
name = "lead"
model = "scripted:lead.json"
inputs = ["Delegate the counting."]

[[agents.apps]]
use = "tests.support.systems:ScriptedSubAgents"
options = {{ script = "{tmp_path / 'sub.json'}" }}
""", encoding="utf-8")
    url = f"sqlite:{tmp_path / 's.db'}"
    async with open_system(load_system_blueprint(tmp_path / "lead.toml"), store=url) as system:
        ran = await system.run_inputs()
        end = system.checkpoint()
    assert ran.answers["lead"].text == "The sub-agent counted."
    async with await open_store(url) as store:
        lead, sub = await records(store, "team.lead"), await records(store, "team.lead/sub/call_0_0")
        made = await fork_system(store, "team", end, "team2")
        copied = await records(store, "team2.lead/sub/call_0_0")
    (called,) = [r.system_seq for r, (_, m) in zip(lead, payloads(lead)) if _calls(m)[:1]]
    (answered,) = [r.system_seq for r in lead if r.kind == "ToolResultRecorded"]
    assert all(called < r.system_seq < answered for r in sub)  # type: ignore[operator]
    assert [t.thread_id for t in made.threads] == ["team2.lead", "team2.lead/sub/call_0_0"]
    assert same_records(copied) == same_records(sub)
