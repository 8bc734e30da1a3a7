"""The trace of a recorded run: its actors, the engine's states, each model call's context,
and the marks of folds, notifications, edits, denials and failures, with their authors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from livecontext.actors import AgentSettings, spawn_agent
from livecontext.actors.apps import App
from livecontext.actors.trace import (
    ActorRole,
    MarkType,
    MessageMode,
    SeqPastEndError,
    Trace,
    WindowsRecordedWarning,
    build_trace,
)
from livecontext.protocol.agent import RunUntilIdle
from livecontext.protocol.history import EngineState
from livecontext.protocol.wire import make_converter
from livecontext.runtime import open_runtime
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.persistence import open_store
from tests.actors.cli.test_cli_render import recorded_run
from tests.actors.trace._runs import COUNTER, audit, cli, refused_edit_run, run_blueprint, trace


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The offline blueprint's run: a recap that folds, two analyzers that notify."""
    store = f"sqlite:{tmp_path_factory.mktemp('offline') / 'o.db'}"
    run_blueprint("offline.toml", store)
    return store


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    store = f"sqlite:{tmp_path_factory.mktemp('refused') / 'r.db'}"
    replies = trio.run(refused_edit_run, store)
    return store, replies


def test_every_actor_that_wrote_a_record_is_a_column_and_the_model_is_one_too(offline: str) -> None:
    got = trace(offline, "lake-trip")
    columns = {a.id: a for a in got.actors}
    senders = {r["sender"] for r in audit(offline, "lake-trip")}
    assert senders == {"history/lake-trip", "engine/lake-trip", "recap/lake-trip", "analyzer/lake-trip.usage",
                       "analyzer/lake-trip.failures"}
    assert senders <= set(columns)
    assert columns["model/scripted"].role is ActorRole.MODEL
    assert columns["recap/lake-trip"].role is ActorRole.RECAP
    assert {columns[s].role for s in senders if s.startswith("analyzer/")} == {ActorRole.ANALYZER}
    # the engine pulls its inputs from the input source and runs its tools in the app host
    assert {"input/lake-trip", "app/lake-trip"} <= set(columns)
    used = {m.sender for m in got.messages} | {m.receiver for m in got.messages}
    assert used == set(columns)  # (no column without an arrow)


def test_the_engine_states_are_the_ones_it_went_through_in_order(refused: tuple[str, dict[str, Any]]) -> None:
    got = trace(refused[0], "t")
    assert [s.state for s in got.states] == [
        EngineState.WAITING_INPUT, EngineState.PENDING_INPUT, EngineState.WAITING_TOOL_RESULTS,
        EngineState.TOOL_RESULTS_READY, EngineState.PENDING_TOOL_RESULTS, EngineState.WAITING_INPUT,
        EngineState.PENDING_INPUT]  # (the last call failed: the engine is still to call the model)
    assert got.states[0].t0 == 0.0 and got.states[-1].seq1 == got.last_seq
    for before, after in zip(got.states, got.states[1:]):
        assert (before.seq1, before.t1) == (after.seq0, after.t0)
        assert before.t0 <= before.t1


def test_each_model_output_is_one_call_whose_levels_add_up_to_its_tokens_within_the_budget(offline: str) -> None:
    got = trace(offline, "lake-trip")
    outputs = [r["seq"] for r in audit(offline, "lake-trip")
               if r["kind"] == "EntryAppended" and "ModelOutputEntry" in r["summary"]]
    assert [c.seq for c in got.model_calls] == outputs
    assert [c.n for c in got.model_calls] == list(range(len(outputs)))
    for call in got.model_calls:
        assert call.levels.tokens == call.tokens == sum(e.tokens for e in call.entries)
        assert 0 < call.tokens <= call.budget == got.budget == 4000
        assert call.entries[0].id == "system" and got.texts[call.entries[0].text].startswith("You plan trips.")
        assert call.levels.recap == sum(e.tokens for e in call.entries if e.level == "recap")
    # the recap folds as the run goes; the stable policy sends it from its next compaction on,
    # which this short run (9 calls in 4,000 tokens) never needs
    assert any(m.type is MarkType.FOLD for m in got.marks)
    answer = got.model_calls[-1]
    assert got.texts[answer.output].startswith("The plan: day 1 drive up")


def test_each_call_is_what_the_engine_rendered_for_it_entry_by_entry(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'r.db'}"
    model, events = trio.run(recorded_run, store, 1600)  # a tight budget: entries at every level, some left out
    got = trace(store, "t")
    assert len(got.model_calls) == len(events) == len(model.requests) == 12
    seen: set[str] = set()
    for call, event, request in zip(got.model_calls, events, model.requests, strict=True):
        assert (call.tokens, call.budget) == (event.tokens, event.budget)
        shown = {e.id: e.level for e in call.entries}
        for span in event.spans:
            if span.shown.value == "omitted":
                assert not {span.first, span.last} & set(shown)
                continue
            for n in range(int(span.first[1:]), int(span.last[1:]) + 1):
                if f"e{n}" in shown:
                    assert shown[f"e{n}"] == span.shown.value, (call.n, n)
        seen |= set(shown.values())
        omitted = sum(int(s.last[1:]) - int(s.first[1:]) + 1 for s in event.spans if s.shown.value == "omitted")
        assert call.levels.omitted == omitted
        # the latest observation carries the apps' windows, as the model got them
        assert got.texts[call.entries[-1].text].endswith(request.messages[-1].content)
    assert {"live", "recent", "gist"} <= seen and any(c.levels.omitted for c in got.model_calls)


def test_a_recap_fold_is_marked_with_its_author_and_the_recaps_gist(offline: str) -> None:
    got = trace(offline, "lake-trip")
    folds = [r for r in audit(offline, "lake-trip") if r["kind"] == "EntriesFolded"]
    marks = [m for m in got.marks if m.type is MarkType.FOLD]
    assert [m.seq for m in marks] == [r["seq"] for r in folds] and len(marks) >= 3
    for mark, record in zip(marks, folds):
        assert mark.author == "recap/lake-trip"
        assert record["summary"] in mark.summary and "recap of the steps up to" in mark.summary
        asks = [m for m in got.messages if m.seq == mark.seq and m.kind == "FoldIntoRecap"]
        assert [(m.sender, m.receiver, m.mode) for m in asks] == [
            ("recap/lake-trip", "history/lake-trip", MessageMode.ASK)]


def test_notifications_are_marked_with_the_analyzer_that_posted_them(offline: str) -> None:
    got = trace(offline, "lake-trip")
    posted = [r for r in audit(offline, "lake-trip") if r["kind"] == "NotificationPosted"]
    marks = [m for m in got.marks if m.type is MarkType.NOTIFICATION]
    assert [(m.seq, m.author) for m in marks] == [(r["seq"], r["sender"]) for r in posted]
    assert {m.author for m in marks} == {"analyzer/lake-trip.usage", "analyzer/lake-trip.failures"}


def test_a_refused_edit_is_marked_as_a_denial_naming_who_tried(refused: tuple[str, dict[str, Any]]) -> None:
    store, replies = refused
    got = trace(store, "t")
    denials = [m for m in got.marks if m.type is MarkType.DENIAL]
    assert [(m.author, m.summary) for m in denials] == [
        ("client/reader", "EditHistory denied to client/reader: it needs edit")]
    ask = next(m for m in got.messages if m.seq == denials[0].seq and m.mode is MessageMode.ASK)
    reply = got.messages[ask.i + 1]
    assert (ask.sender, ask.receiver, ask.kind) == ("client/reader", "history/t", "EditHistory")
    assert (reply.sender, reply.receiver, reply.kind, reply.reply_to) == ("history/t", "client/reader",
                                                                          "AccessDenied", ask.i)
    # the edit it was allowed to make, by another client, is an edit mark of that client's
    edits = [m for m in got.marks if m.type is MarkType.EDIT]
    assert [m.author for m in edits] == ["client/editor"] and edits[0].seq > denials[0].seq
    assert {a.id: a.role for a in got.actors}["client/reader"] is ActorRole.OTHER


def test_a_failed_step_and_a_pause_are_marked_and_the_failure_drawn_as_the_models_error(
        refused: tuple[str, dict[str, Any]]) -> None:
    got = trace(refused[0], "t")
    failures = [m for m in got.marks if m.type is MarkType.FAILURE]
    assert len(failures) == 1 and failures[0].author == "engine/t" and "turn 2" in failures[0].summary
    pauses = [m for m in got.marks if m.type is MarkType.PAUSE]
    assert [(m.seq, m.author) for m in pauses] == [(got.last_seq, "engine/t")]
    assert "PendingInput" in pauses[0].summary
    error = next(m for m in got.messages if m.kind == "ModelError")
    request = got.messages[error.reply_to] if error.reply_to is not None else None
    assert request is not None and (request.sender, request.receiver) == ("engine/t", error.sender)
    assert (error.sender, error.receiver) == ("model/scripted", "engine/t")  # (the model that answered before)


def test_at_cuts_the_trace_at_that_seq_and_keeps_what_came_before_as_it_was(offline: str) -> None:
    full = trace(offline, "lake-trip")
    cut_at = full.model_calls[4].seq
    cut = trace(offline, "lake-trip", at=cut_at)
    assert (cut.at, cut.last_seq) == (cut_at, cut_at)
    assert max(m.seq for m in cut.messages) == cut_at and all(m.seq <= cut_at for m in cut.marks)
    assert cut.states[-1].seq1 == cut_at and cut.states[:-1] == full.states[:len(cut.states) - 1]
    assert [_call(c, cut) for c in cut.model_calls] == [_call(c, full) for c in full.model_calls[:5]]
    assert cut.marks == tuple(m for m in full.marks if m.seq <= cut_at)
    with pytest.raises(SeqPastEndError, match=rf"--at 999 is past the end of thread lake-trip: its last seq is "
                                              rf"{full.last_seq}"):
        trace(offline, "lake-trip", at=999)


def _call(call: Any, owner: Trace) -> tuple[Any, ...]:
    """A model call with its texts in place of their keys (keys differ between traces)."""
    return (call.seq, call.tokens, call.levels,
            tuple((e.id, e.level, e.tokens, owner.texts[e.text]) for e in call.entries), owner.texts[call.output])


async def test_a_thread_whose_apps_cannot_be_made_here_is_traced_with_their_recorded_windows(tmp_path: Path) -> None:
    class Local(App):  # (defined here: nothing can import it by name to rebuild it)
        name = "local"

        def view(self) -> str:
            return "LOCAL WINDOW"

    store_url = f"sqlite:{tmp_path / 'l.db'}"
    async with await open_store(store_url) as store, await store.open_thread("l", owner="test") as log:
        async with open_runtime() as rt:
            agent = await spawn_agent(rt, log, ScriptedModel.from_turns([{"text": "Hello."}]), AgentSettings("l"),
                                      converter=make_converter(), counter=COUNTER, apps=[Local()], inputs=["hi"])
            await rt.client("test").ask(agent.engine, RunUntilIdle(), timeout=30)
            await rt.aclose()
    with pytest.warns(WindowsRecordedWarning, match=r"cannot rebuild app 'local' of thread 'l'.*"
                      r"app 'local' is shown as its window was recorded .*; the trace shows the windows as recorded"):
        got = await build_trace(store_url, "l", counter=COUNTER)
    (call,) = got.model_calls
    assert call.tokens == sum(e.tokens for e in call.entries) > 0
    assert "[Window: local]\nLOCAL WINDOW" in got.texts[call.entries[-1].text]


def test_the_engines_own_control_tools_are_drawn_as_recorded_results_not_as_calls_to_the_apps(
        tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "output", "arguments": {"text": "Looked at 2 of 4."}}]},
        {"tool_calls": [{"name": "task_abandon", "arguments": {"reason": "There is no /nope."}}]}]}), encoding="utf-8")
    store = f"sqlite:{tmp_path / 'db'}"
    code, _, err = cli("run", "--store", store, "--thread", "t", "--model", f"scripted:{script}", "--input", "go")
    assert code == 0, err
    got = trace(store, "t")
    assert [m for m in got.messages if m.kind == "InvokeTool"] == []  # the engine answered them itself
    recorded = [m.summary for m in got.messages if m.kind == "RecordToolResult"]
    assert recorded == ["output call_0_0 ok: shown to the user: Looked at 2 of 4.",
                        "task_abandon call_1_0 ok: task abandoned: There is no /nope."]
