"""Resuming a thread in a new session: where it continues, what runs again, what the apps hold."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

import trio
from livecontext.actors import AgentSettings
from livecontext.actors.apps import App, Notebook, ToolOutcome, tool
from livecontext.actors.agent._format import apps_json, entry_json
from livecontext.actors.agent._session import Session, open_session, run_until_idle
from livecontext.actors.history import HistoryState, HistoryStore, load_state
from livecontext.protocol.agent import (
    AppendInput,
    GetTail,
    GetWindows,
    IdleReason,
    RecordToolResult,
    RecordToolStarted,
    Tail,
    Windows,
)
from livecontext.protocol.history import EngineState, ModelInputEntry, ModelOutputEntry, ToolResult, ToolStatus
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.records import AppEffect, NotebookEdited
from livecontext.protocol.wire import make_converter
from livecontext.runtime import open_runtime
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.persistence import LogWriteError, open_store
from livecontext.runtime.tokens import TokenCounter


from tests.support.command import notebook_turns


class Mailer(App):
    """An app with a tool that acts on the world outside the log, so it is not idempotent."""

    name = "mailer"
    sent: ClassVar[list[str]] = []
    """Every mail sent, by any instance (the outside world survives a restart)."""
    started: ClassVar[trio.Event | None] = None
    """Set once a send has begun; the send then waits for ever (a process about to die)."""

    def view(self) -> str:
        return "(mail goes out at once)"

    @tool
    async def send_mail(self, to: str) -> ToolOutcome:
        """Send a mail.

        Args:
            to: The recipient.
        """
        Mailer.sent.append(to)
        if Mailer.started is not None:
            Mailer.started.set()
            await trio.sleep_forever()
        return ToolOutcome.ok(f"sent to {to}", f"sent to {to}", "mail sent")


MAIL_TURNS = [
    {"text": "mailing bob", "tool_calls": [{"name": "send_mail", "arguments": {"to": "bob"}}]},
    {"text": "told bob"},
]


@asynccontextmanager
async def session(url: str, turns: Sequence[dict[str, Any]], *, inputs: Sequence[str] = ("go",),
                  apps: Sequence[App] | None = None,
                  notes: list[str] | None = None) -> AsyncIterator[tuple[Session, ScriptedModel]]:
    """A session on thread ``t`` with a fresh scripted model."""
    model = ScriptedModel.from_turns(turns)
    async with open_session(url, AgentSettings(thread_id="t"), "scripted", inputs=inputs, model=model,
                            apps=apps, on_note=(notes if notes is not None else []).append) as s:
        yield s, model


async def committed(url: str) -> HistoryState:
    """The thread's state, folded from the store's log."""
    async with await open_store(url) as store:
        async with await store.open_reader("t") as reader:
            return await load_state(reader, make_converter(), "t")


def comparable(state: HistoryState) -> list[dict[str, Any]]:
    out = []
    for entry in state.entries:
        data = entry_json(entry)
        del data["created_at"], data["author"]
        out.append(data)
    return out


def results(state: HistoryState) -> list[ToolResult]:
    return [r for e in state.entries for r in getattr(e, "results", ())]


async def tail(s: Session) -> Tail:
    got = await s.rt.client("test-tail").ask(s.agent.history, GetTail())
    assert isinstance(got, Tail)
    return got


async def test_a_resumed_thread_continues_from_the_step_where_it_stopped(tmp_path: Path) -> None:
    turns = notebook_turns(5)
    async with session(f"sqlite:{tmp_path / 'whole.db'}", turns) as (s, _):
        await run_until_idle(s, None)
    url = f"sqlite:{tmp_path / 'stopped.db'}"
    async with session(url, turns) as (s, first):
        idle = await run_until_idle(s, 7)
    assert idle.reason is IdleReason.MAX_STEPS and idle.state is not EngineState.WAITING_INPUT
    async with session(url, turns) as (s, second):
        assert s.resumed_state is idle.state
        idle2 = await run_until_idle(s, None)
    assert idle2.state is EngineState.WAITING_INPUT
    answered_first = set(range(len(turns))) - set(first.unused_turns())
    assert answered_first and all(second.attempts(i) == 0 for i in answered_first)
    assert set(second.unused_turns()) == answered_first
    assert comparable(await committed(url)) == comparable(await committed(f"sqlite:{tmp_path / 'whole.db'}"))


async def test_input_given_to_a_thread_stopped_mid_step_is_held_back_not_fed_twice(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'db'}"
    turns = notebook_turns(2)
    async with session(url, turns) as (s, _):
        await run_until_idle(s, 3)
    notes: list[str] = []
    async with session(url, turns, notes=notes) as (s, _):
        assert s.held_inputs == ("go",)
        await run_until_idle(s, None)
    assert len(notes) == 1 and "in the middle of a step" in notes[0]
    inputs = [e for e in (await committed(url)).entries if isinstance(e, ModelInputEntry)]
    assert [e.text for e in inputs] == ["go"]


async def test_input_given_to_a_thread_waiting_for_input_is_fed(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'db'}"
    turns = [{"text": "hello"}, {"text": "hello again"}]
    async with session(url, turns) as (s, _):
        await run_until_idle(s, None)
    async with session(url, turns, inputs=("more",)) as (s, model):
        assert s.resumed_state is EngineState.WAITING_INPUT and s.held_inputs == ()
        await run_until_idle(s, None)
    state = await committed(url)
    assert [getattr(e, "text", None) for e in state.entries][::2] == ["go", "more"]
    assert state.state is EngineState.WAITING_INPUT and state.model_outputs == 2


async def test_a_non_idempotent_tool_recorded_as_started_but_never_finished_is_interrupted_on_resume(
        tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'db'}"
    Mailer.sent.clear()
    async with session(url, MAIL_TURNS, apps=[Mailer()]) as (s, _):
        await run_until_idle(s, 2)  # the input, then the model's output with the call
        last = (await tail(s)).last
        assert isinstance(last, ModelOutputEntry)
        call = last.tool_calls[0]
        # what the engine writes just before it invokes a non-idempotent tool; then "the crash"
        await s.rt.client("crash").ask(s.agent.history, RecordToolStarted(call.id, call.name))
    async with session(url, MAIL_TURNS, apps=[Mailer()]) as (s, model):
        await run_until_idle(s, None)
    assert Mailer.sent == []  # not sent again: its outcome is unknown
    assert model.unused_turns() == (0,)  # turn 0 was answered before the crash
    state = await committed(url)
    [result] = results(state)
    assert result.status is ToolStatus.INTERRUPTED and result.call_id == call.id
    assert "outcome" in result.content.live.text
    assert state.state is EngineState.WAITING_INPUT and state.started == {}


async def test_a_non_idempotent_tool_cut_off_mid_call_runs_once_and_is_interrupted_on_resume(
        tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'db'}"
    Mailer.sent.clear()
    Mailer.started = trio.Event()
    try:
        async with session(url, MAIL_TURNS, apps=[Mailer()]) as (s, _):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_until_idle, s, None)
                await Mailer.started.wait()
                nursery.cancel_scope.cancel()  # the process dies while the mail goes out
    finally:
        Mailer.started = None
    stopped = await committed(url)
    assert stopped.state is EngineState.WAITING_TOOL_RESULTS and list(stopped.started.values()) == ["send_mail"]
    async with session(url, MAIL_TURNS, apps=[Mailer()]) as (s, _):
        await run_until_idle(s, None)
    assert Mailer.sent == ["bob"]
    [result] = results(await committed(url))
    assert result.status is ToolStatus.INTERRUPTED


async def test_an_idempotent_builtin_tool_without_a_recorded_result_runs_again_on_resume(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'db'}"
    turns = notebook_turns(1)
    async with session(url, turns) as (s, _):
        await run_until_idle(s, 2)
        last = (await tail(s)).last
        assert isinstance(last, ModelOutputEntry)
        call = last.tool_calls[0]
        await s.rt.client("crash").ask(s.agent.history, RecordToolStarted(call.id, call.name))
    async with session(url, turns) as (s, model):
        await run_until_idle(s, None)
        summary = await s.summary()
    assert model.unused_turns() == (0,)  # turn 0 was answered before the crash
    state = await committed(url)
    [result] = results(state)
    assert result.status is ToolStatus.OK
    assert summary["apps"] == {"notebook": "line 0"}
    assert apps_json(state.app_histories()) == {"notebook": "line 0"}


async def test_after_resume_an_app_holds_the_fold_of_its_committed_effects(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'db'}"
    turns = notebook_turns(1)
    counter = TokenCounter()
    async with session(url, turns) as (s, _):
        await run_until_idle(s, 2)
        last = (await tail(s)).last
        assert isinstance(last, ModelOutputEntry)
        call = last.tool_calls[0]
        # the result and its effect commit together; the crash comes before the app applies it
        result = ToolResult(call.id, call.name, ToolStatus.OK, counter.content("line 0", "+line 0", "edited"))
        await s.rt.client("crash").ask(
            s.agent.history, RecordToolResult(result, AppEffect("notebook", NotebookEdited(text="line 0"))))
        window = await s.rt.client("look").ask(s.agent.apps, GetWindows())
        assert isinstance(window, Windows) and "line 0" not in window.text
    async with session(url, turns) as (s, model):
        window = await s.rt.client("look").ask(s.agent.apps, GetWindows())
        assert isinstance(window, Windows) and "line 0" in window.text
        await run_until_idle(s, None)
        summary = await s.summary()
    assert model.unused_turns() == (0,)  # turn 0 was answered before the crash
    state = await committed(url)
    assert [r.status for r in results(state)] == [ToolStatus.OK]  # not run a second time
    folded = Notebook()
    for history in state.app_histories():
        for effect in history.effects:
            folded.apply(effect.effect)
    assert summary["apps"] == {"notebook": folded.text} == {"notebook": "line 0"}


async def test_an_effect_whose_result_was_never_committed_leaves_no_trace(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'db'}"
    turns = notebook_turns(2)
    async with session(url, turns) as (s, _):
        await run_until_idle(s, 5)  # line 0 committed; the second edit's output is recorded
        assert (await tail(s)).state is EngineState.WAITING_TOOL_RESULTS
    state = await committed(url)
    assert apps_json(state.app_histories()) == {"notebook": "line 0"}
    records = json.dumps([entry_json(e) for e in state.entries])
    assert "line 1" in records  # asked for in the output's tool call, not applied
    async with session(url, turns) as (s, _):
        await run_until_idle(s, None)
        summary = await s.summary()
    assert summary["apps"] == {"notebook": "line 0\nline 1"}


async def test_a_fork_resumed_from_a_copied_snapshot_writes_snapshots_of_its_own(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'db'}"
    turns = notebook_turns(3)
    model = ScriptedModel.from_turns(turns)
    async with open_session(url, AgentSettings(thread_id="t", snapshot_every=2), "scripted", inputs=("go",),
                            model=model) as s:
        await run_until_idle(s, 6)
    async with await open_store(url) as store:
        info = await store.fork("t", 6, "u")
        async with await store.open_reader("u") as reader:
            copied = await reader.latest_snapshot()
            assert copied is not None and json.loads(copied.state)["thread_id"] == "t"
            assert (await load_state(reader, make_converter(), "u")).thread_id == "u"
    assert info.last_seq == 6
    model = ScriptedModel.from_turns(turns)
    async with open_session(url, AgentSettings(thread_id="u", snapshot_every=2), "scripted",
                            model=model) as s:
        await run_until_idle(s, None)
    async with await open_store(url) as store:
        async with await store.open_reader("u") as reader:
            own = await reader.latest_snapshot()
            assert own is not None and own.seq > 6
            assert json.loads(own.state)["thread_id"] == "u"
            assert (await load_state(reader, make_converter(), "u")).state is EngineState.WAITING_INPUT


class _SnapshotsFail:
    """A thread log whose snapshots cannot be written (a full disk, say); records still can."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def write_snapshot(self, seq: int, state: str, **parts: Any) -> Any:
        raise LogWriteError(self._inner.thread_id, "no space left on device")


async def test_a_snapshot_that_cannot_be_written_does_not_fail_the_step_it_follows(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'db'}"
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="test") as log, open_runtime() as rt:
            history = await rt.spawn(
                lambda: HistoryStore("t", _SnapshotsFail(log), make_converter(), TokenCounter(),  # type: ignore[arg-type]
                                     snapshot_every=2), ActorId("history", "t"))
            client = rt.client("test")
            tail = await client.ask(history, AppendInput("go"))  # seq 2: a snapshot is due
            assert isinstance(tail, Tail) and tail.state is EngineState.PENDING_INPUT
            await rt.aclose()
        async with await store.open_reader("t") as reader:
            assert await reader.last_seq() == 2 and await reader.latest_snapshot() is None
