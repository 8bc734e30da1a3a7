"""A small agent world for context-management tests: scripts, a recording model, checks.

The checks read the thread's event log (the source of truth) and the requests the model
received; each raises ``AssertionError`` naming what broke.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.testing
from attrs import frozen

from livecontext.protocol.agent import (
    AppendInput,
    AppendOutput,
    AppendToolResults,
    GetTail,
    NotificationPosted,
    RecordToolResult,
    Tail,
)
from livecontext.protocol.context import EntriesFolded, EntryRef, HistoryEdited, HistorySlice, ReadHistory
from livecontext.protocol.history import (
    HistoryEntry,
    ModelOutputEntry,
    ModelReply,
    ModelRequest,
    RecapEntry,
    Retention,
    Role,
    ToolCall,
    ToolResult,
    ToolResultsEntry,
    ToolStatus,
)
from livecontext.protocol.kernel import ActorId, Message
from livecontext.protocol.records import EntryAppended, ToolResultsAppended
from livecontext.protocol.wire import make_converter
from livecontext.actors.agent._agent import HISTORY_CAPABILITIES
from livecontext.actors.analyzers import Analyzer
from livecontext.actors.history import HistoryLimits, HistoryState, HistoryStore
from livecontext.runtime import ActorRef, Context, Runtime, open_runtime
from livecontext.runtime.models import ModelClient, ScriptedModel, TextCallback
from livecontext.runtime.persistence import StoredRecord, ThreadLog, open_store
from livecontext.runtime.testing import SteppingScheduler
from livecontext.runtime.tokens import TokenCounter

CONVERTER = make_converter()
COUNTER = TokenCounter()
"""Shared: loading the tokenizer takes longer than a whole seeded run."""


class RecordingModel(ModelClient):
    """Wraps a model client; keeps every request it received and every reply it gave.

    Given the thread's log (:meth:`watch`), it also notes the unfolded history's size at each
    call, replaying the log's new records as the call arrives.
    """

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner
        self.name = inner.name
        self.requests: list[ModelRequest] = []
        self.replies: list[tuple[int, ModelReply]] = []
        self.sizes: list[tuple[int, int]] = []
        """``(active entries, active tokens)`` at each call (with :meth:`watch`)."""
        self._log: ThreadLog | None = None
        self._state: HistoryState | None = None

    def watch(self, log: ThreadLog, thread_id: str) -> None:
        """Note the history's size at every call from now on."""
        self._log = log
        self._state = HistoryState(thread_id)

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.requests.append(request)
        if self._log is not None and self._state is not None:
            for seq, _, payload in decode(await self._log.read(self._state.seq + 1)):
                self._state.apply(seq, payload)
            self.sizes.append((len(self._state.active), self._state.active_tokens))
        reply = await self.inner.complete(request, on_text)
        self.replies.append((request.call_index, reply))
        return reply


class NoteEachResult(Analyzer):
    """A test analyzer: posts one notification per tool-results entry it sees."""

    async def analyze(self, view: HistorySlice) -> str | None:
        results = [e for e in view.entries if isinstance(e, ToolResultsEntry)]
        return f"saw the results in {results[-1].id}" if results else None


def agent_turns(inputs: int, steps_per_input: int = 3, *, words: int = 0) -> list[dict[str, Any]]:
    """A script: per input, an ok tool call, two failing ones, ..., then a plain answer.

    ``words`` pads each turn's text (and every other notebook note) with that many words.
    """
    turns: list[dict[str, Any]] = []
    last_note = ""
    for i in range(inputs):
        for k in range(steps_per_input - 1):
            n = len(turns)
            pad = _filler(n, words)
            if k % 2 == 0:
                note = f"note {n}" + (pad if n % 2 else "")
                calls = [{"name": "notebook_replace", "arguments": {"old_text": last_note, "new_text": note}}]
                last_note = note
            else:  # an unknown tool fails the same way each time: RepeatedFailures notices
                calls = [{"name": "no_such_tool", "arguments": {}}, {"name": "no_such_tool", "arguments": {}}]
            turns.append({"text": f"turn {n} of input {i}{pad}", "tool_calls": calls})
        turns.append({"text": f"answer {len(turns)} to input {i}{_filler(len(turns), words)}"})
    return turns


def _filler(n: int, words: int) -> str:
    return "".join(f" w{(n * 7 + j) % 97}" for j in range(words))


def scripted(turns: Sequence[Mapping[str, Any]]) -> RecordingModel:
    """A recording wrapper around a scripted model."""
    return RecordingModel(ScriptedModel.from_turns(turns))


def decode(records: Iterable[StoredRecord]) -> list[tuple[int, str, Message]]:
    """``(seq, sender, payload)`` of each record."""
    return [(r.seq, r.sender, CONVERTER.load_message(json.loads(r.payload))) for r in records]


def replay(thread_id: str, records: Sequence[tuple[int, str, Message]]) -> HistoryState:
    """The thread's state replayed from its records."""
    return HistoryState.replay(thread_id, ((seq, payload) for seq, _, payload in records))


# -- checks -------------------------------------------------------------------------------------------


def check_no_lost_entry(thread_id: str, records: Sequence[tuple[int, str, Message]],
                        model: RecordingModel, inputs: Sequence[str]) -> None:
    """Every model output and input is in the history exactly once; ids unique and increasing."""
    state = replay(thread_id, records)
    appended = [p.entry for _, _, p in records if isinstance(p, (EntryAppended, ToolResultsAppended))]
    ids = [e.id for e in appended] + [p.recap.id for _, _, p in records if isinstance(p, EntriesFolded)]
    assert len(ids) == len(set(ids)), f"duplicate entry ids: {[i for i, n in Counter(ids).items() if n > 1]}"
    numbers = [int(e.id[1:]) for e in state.entries]
    assert numbers == sorted(numbers), f"entry ids out of order: {[e.id for e in state.entries]}"
    outputs = [e for e in state.entries if isinstance(e, ModelOutputEntry)]
    produced = Counter((reply.text, tuple(c.id for c in reply.tool_calls)) for _, reply in model.replies)
    stored = Counter((e.content.live.text, tuple(c.id for c in e.tool_calls)) for e in outputs)
    assert stored == produced, f"outputs produced {produced} but stored {stored}"
    assert all(n == 1 for n in stored.values()), f"an output is stored twice: {stored}"
    stored_inputs = [e.text for e in state.entries if type(e).__name__ == "ModelInputEntry" and e.text]
    assert stored_inputs == list(inputs), f"inputs {list(inputs)} stored as {stored_inputs}"
    for e in outputs:  # every tool call has its results right after the output
        if e.tool_calls:
            nxt = next(n for n in state.entries[state.pos[e.id] + 1:] if not isinstance(n, RecapEntry))
            assert isinstance(nxt, ToolResultsEntry), f"{e.id}'s calls have no results entry after it"
            assert [r.call_id for r in nxt.results] == [c.id for c in e.tool_calls]


def check_no_orphan_calls(messages: Sequence[Any], where: str) -> None:
    """Each assistant tool call has a tool message after it, and each tool message a call."""
    open_calls: list[str] = []
    for i, m in enumerate(messages):
        if m.role is Role.TOOL:
            assert m.tool_call_id in open_calls, f"{where}: tool message {i} answers no open call ({m.tool_call_id})"
            open_calls.remove(m.tool_call_id)
            continue
        assert not open_calls, f"{where}: calls {open_calls} have no tool message before message {i}"
        if m.role is Role.ASSISTANT:
            open_calls = [c.id for c in m.tool_calls]
    assert not open_calls, f"{where}: calls {open_calls} are never answered"


def check_notifications(thread_id: str, records: Sequence[tuple[int, str, Message]]) -> int:
    """Every posted notification rides on exactly one later entry, or is still pending.

    Returns how many were posted.
    """
    posted: dict[str, int] = {}
    delivered: dict[str, str] = {}
    for seq, _, payload in records:
        if isinstance(payload, NotificationPosted):
            nid = payload.notification.id
            assert nid not in posted, f"seq {seq}: notification id {nid} reused"
            posted[nid] = seq
        elif isinstance(payload, (EntryAppended, ToolResultsAppended)):
            for note in getattr(payload.entry, "notifications", ()):
                assert note.id in posted, f"seq {seq}: {payload.entry.id} delivers {note.id}, never posted before"
                assert note.id not in delivered, (
                    f"seq {seq}: {note.id} delivered twice ({delivered.get(note.id)} and {payload.entry.id})")
                delivered[note.id] = payload.entry.id
    pending = {n.id for n in replay(thread_id, records).pending_notifications}
    for nid in posted:
        assert (nid in delivered) != (nid in pending), f"{nid} is lost (neither delivered nor pending)"
    return len(posted)


def check_folds(thread_id: str, records: Sequence[tuple[int, str, Message]], folder: str) -> int:
    """Every fold was a CAS-consistent edit of the state before it; returns how many folds."""
    state = HistoryState(thread_id)
    folds = 0
    for seq, sender, payload in records:
        if isinstance(payload, EntriesFolded):
            folds += 1
            _check_one_fold(state, payload, sender, folder, seq)
        elif isinstance(payload, HistoryEdited):
            assert all(state.entry(i) is not None and state.entry(i).retention is Retention.DISPOSABLE  # type: ignore[union-attr]
                       for i in payload.removed), f"seq {seq} removes entries that are not DISPOSABLE"
        state.apply(seq, payload)
    return folds


def _check_one_fold(state: HistoryState, rec: EntriesFolded, sender: str, folder: str, seq: int) -> None:
    assert sender == folder, f"seq {seq}: fold by {sender}, expected {folder}"
    previous = state.recaps[-1] if state.recaps else None
    ids = [i for i in rec.folded if previous is None or i != previous.id]
    if previous is not None:
        assert previous.id in rec.folded, f"seq {seq}: the fold leaves the previous recap {previous.id} active"
    active = [e.id for e in state.active]
    assert ids and all(i in active for i in ids), f"seq {seq}: folds entries that are not active: {ids}"
    first = active.index(ids[0])
    assert active[first:first + len(ids)] == ids, f"seq {seq}: folded entries {ids} are not contiguous"
    last = state.last
    assert last is None or last.id not in ids, f"seq {seq}: folds the newest entry {last.id}"
    folded = set(ids)
    for i in ids:
        entry = state.entry(i)
        assert entry is not None and entry.retention is not Retention.CRITICAL, f"seq {seq}: folds CRITICAL {i}"
        at = state.pos[i]
        if isinstance(entry, ModelOutputEntry) and entry.tool_calls:
            partner = next(e for e in state.entries[at + 1:] if not isinstance(e, RecapEntry))
            assert partner.id in folded, f"seq {seq}: folds output {i} without its results {partner.id}"
        if isinstance(entry, ToolResultsEntry):
            partner = next(e for e in reversed(state.entries[:at]) if not isinstance(e, RecapEntry))
            assert partner.id in folded or partner.folded, f"seq {seq}: folds results {i} without output {partner.id}"
    covers = ((previous.id,) if previous is not None else ()) + tuple(ids)
    assert rec.recap.covers == covers, f"seq {seq}: recap covers {rec.recap.covers}, expected {covers}"


@frozen
class Trace:
    """What a run did, in a form that compares across runs (no clocks, no random ids)."""

    deliveries: tuple[Any, ...]
    records: tuple[tuple[str, str, str], ...]
    """``(sender, kind, entry or notification id)`` of each log record."""


def trace_of(deliveries: Sequence[Any], records: Sequence[tuple[int, str, Message]]) -> Trace:
    """A comparable trace of a run."""
    def ident(p: Message) -> str:
        if isinstance(p, (EntryAppended, ToolResultsAppended)):
            return p.entry.id
        if isinstance(p, EntriesFolded):
            return f"{p.recap.id}<-{','.join(p.folded)}"
        if isinstance(p, NotificationPosted):
            return f"{p.notification.id}:{p.notification.text}"
        return ""
    return Trace(tuple(deliveries), tuple((s, type(p).__name__, ident(p)) for _, s, p in records))


async def step_until_settled(scheduler: SteppingScheduler, body: Callable[[], Awaitable[None]]) -> None:
    """Run ``body`` while ``scheduler`` delivers what its runtime sends, one envelope at a time
    in its seed's order, until ``body`` returns; then go on until nothing is left to deliver
    (the actors ``body`` started may still be working).

    Call it under trio's autojump clock (the ``autojump_clock`` fixture): when nothing is
    deliverable and ``body`` still waits, only a timer can move the run on, and the clock jumps
    to it at once, so no real-time pause decides what is delivered when.
    """
    clock = trio.lowlevel.current_clock()
    assert isinstance(clock, trio.testing.MockClock) and clock.autojump_threshold == 0, (
        "step_until_settled runs under the autojump clock: take the autojump_clock fixture")
    done = trio.Event()

    async def run_body() -> None:
        await body()
        done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_body)
        while not done.is_set():
            if await scheduler.step() is None:
                await trio.sleep(0.001)  # (the clock's time, not the machine's: a timer may be due)
    await scheduler.run_until_idle()


# -- a history store alone, driven by a root client ------------------------------------------------


@frozen
class HistoryWorld:
    """A running history store, a root client (every capability) and the thread's log."""

    rt: Runtime
    history: ActorRef[HistoryStore]
    root: Context
    log: ThreadLog

    async def read(self, **filters: Any) -> HistorySlice:
        """``ReadHistory(**filters)`` as the root client."""
        view = await self.root.ask(self.history, ReadHistory(**filters))
        assert isinstance(view, HistorySlice)
        return view

    async def entry(self, entry_id: str) -> HistoryEntry:
        """One entry, folded or not."""
        view = await self.read(start_id=entry_id, end_id=entry_id, include_folded=True)
        assert len(view.entries) == 1, view
        return view.entries[0]

    async def ref(self, entry_id: str) -> EntryRef:
        """The entry and its current revision."""
        return EntryRef(entry_id, (await self.entry(entry_id)).revision)

    async def records(self) -> list[tuple[int, str, Message]]:
        """The thread's log, decoded."""
        return decode(await self.log.read(1))

    async def input(self, text: str) -> Tail:
        """Append a user input."""
        return await self.root.ask(self.history, AppendInput(text))

    async def output(self, text: str, *calls: str) -> Tail:
        """Append a model output calling the tools named ``calls``."""
        tail = await self.root.ask(self.history, GetTail())
        tool_calls = tuple(ToolCall(f"call_{tail.model_outputs}_{i}", name, "{}") for i, name in enumerate(calls))
        return await self.root.ask(self.history, AppendOutput(text, tool_calls))

    async def results(self, *texts: str, failed: bool = False) -> Tail:
        """Record one result per pending call, then append the results entry."""
        tail = await self.root.ask(self.history, GetTail())
        last = tail.last
        assert isinstance(last, ModelOutputEntry)
        status = ToolStatus.FAILED if failed else ToolStatus.OK
        for call, text in zip(last.tool_calls, texts, strict=True):
            result = ToolResult(call.id, call.name, status, COUNTER.content(text, text, text[:40]))
            await self.root.ask(self.history, RecordToolResult(result))
        return await self.root.ask(self.history, AppendToolResults())

    async def step(self, n: int) -> None:
        """One whole step: an input, an output with a tool call and its result, an answer."""
        await self.input(f"input {n}")
        await self.output(f"calling tool {n}", "notebook_replace")
        await self.results(f"result {n}")
        await self.output(f"answer {n}")


@asynccontextmanager
async def open_history(thread_id: str = "h", *, limits: HistoryLimits | None = None,
                       pin_task: bool = False) -> AsyncIterator[HistoryWorld]:
    """A history store on a memory log in a live runtime.

    Its first input is not pinned unless ``pin_task``: these tests fold and edit entries from
    the first one on (pinning has tests of its own).
    """
    store = await open_store("memory:")
    async with store:
        log = await store.open_thread(thread_id, owner="test")
        async with open_runtime() as rt:
            history = await rt.spawn(
                lambda: HistoryStore(thread_id, log, CONVERTER, COUNTER, limits=limits, pin_task=pin_task),
                ActorId("history", thread_id), capabilities=HISTORY_CAPABILITIES)
            yield HistoryWorld(rt, history, rt.client("root"), log)
