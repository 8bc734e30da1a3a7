"""The history store's shortcuts give what its general path gives.

The store keeps the tail it made until the next commit, leaves the limits unchecked when none
is set or crossed, and keeps the text of its senders' ids. A store that takes none of these
shortcuts answers the same requests, publishes the same messages and writes the same log.
"""

from __future__ import annotations

import re
from typing import Any

import trio
import trio.testing
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from livecontext.actors.agent._agent import HISTORY_CAPABILITIES
from livecontext.actors.history import HistoryLimits, HistoryStore, history_topic
from livecontext.protocol.agent import (
    AppendInput,
    AppendOutput,
    AppendToolResults,
    GetTail,
    PostNotification,
    RecordToolResult,
    Tail,
)
from livecontext.protocol.context import EditHistory, EntryRef, FoldIntoRecap, ReadHistory, SetRetention
from livecontext.protocol.history import (
    EngineState,
    ModelOutputEntry,
    RecapEntry,
    Retention,
    ToolCall,
    ToolResult,
    ToolStatus,
)
from livecontext.protocol.kernel import ActorId, Message
from livecontext.protocol.wire import dump_json
from livecontext.runtime import open_runtime
from livecontext.runtime.persistence import open_store
from livecontext.runtime.testing import actor_instance

from tests.support.context_world import CONVERTER, COUNTER


class GeneralStore(HistoryStore):
    """A history store that takes no shortcut: what the shortcuts are held to."""

    def _tail(self) -> Tail:
        return self._fresh_tail()

    def limits_to_check(self) -> bool:
        return True

    def _sender_text(self, sender: ActorId) -> str:
        return str(sender)


_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00")


def _plain(obj: Any) -> str:
    """``obj`` as JSON text, its times left out (the two stores are asked at other times)."""
    return _TIME.sub("<time>", dump_json(CONVERTER.unstructure(obj)))


_OPS = st.lists(st.one_of(
    st.tuples(st.just("step"), st.integers(0, 2)),
    st.tuples(st.just("step"), st.integers(0, 2)),
    st.tuples(st.just("step"), st.integers(0, 2)),
    st.tuples(st.just("input"), st.sampled_from(["hello there", "a longer input, with more words", " "])),
    st.tuples(st.just("output"), st.integers(0, 2)),
    st.tuples(st.just("result"), st.booleans()),
    st.tuples(st.just("results"), st.none()),
    st.tuples(st.just("note"), st.sampled_from(["look at this", ""])),
    st.tuples(st.just("tail"), st.none()),
    st.tuples(st.just("dispose"), st.integers(0, 30)),
    st.tuples(st.just("fold"), st.integers(1, 3)),
), max_size=40)
_LIMITS = st.none() | st.builds(
    HistoryLimits, max_entries=st.none() | st.integers(2, 8), max_tokens=st.none() | st.integers(20, 300))


async def _request(root: Any, store: Any, op: str, arg: Any) -> Message | None:
    """The request ``op`` makes of ``store`` now (reading what it needs from the store)."""
    if op == "input":
        return AppendInput(arg)
    if op == "note":
        return PostNotification(arg)
    if op == "tail":
        return GetTail()
    if op == "results":
        return AppendToolResults()
    tail = await root.ask(store, GetTail())
    if op == "step":  # what the engine would do next
        op, arg = {
            EngineState.WAITING_INPUT: ("input", "next please"),
            EngineState.PENDING_INPUT: ("output", arg),
            EngineState.PENDING_TOOL_RESULTS: ("output", arg),
            EngineState.WAITING_TOOL_RESULTS: ("result", arg != 1),
            EngineState.TOOL_RESULTS_READY: ("results", None),
        }[tail.state]
        if op in ("input", "results"):
            return AppendInput(arg) if op == "input" else AppendToolResults()
    if op == "output":
        calls = tuple(ToolCall(f"call_{tail.model_outputs}_{k}", "record", "{}") for k in range(arg))
        return AppendOutput(f"answer {tail.model_outputs}", calls)
    if op == "result":
        last = tail.last
        if not isinstance(last, ModelOutputEntry) or len(tail.recorded) >= len(last.tool_calls):
            return None
        call = last.tool_calls[len(tail.recorded)]
        status = ToolStatus.OK if arg else ToolStatus.FAILED
        return RecordToolResult(ToolResult(call.id, call.name, status, COUNTER.content("done", "done", "ok")))
    active = (await root.ask(store, ReadHistory())).entries
    if not active:
        return None
    if op == "dispose":
        entry = active[arg % len(active)]
        return EditHistory((SetRetention(EntryRef(entry.id, entry.revision), Retention.DISPOSABLE),))
    entries = [e for e in active if e.retention is not Retention.CRITICAL][:arg]
    refs = tuple(EntryRef(e.id, e.revision) for e in entries)
    return FoldIntoRecap(refs, "a recap", "recap", "test") if refs else None


async def _run(ops: list[tuple[str, Any]], limits: HistoryLimits | None) -> None:
    store = await open_store("memory:")
    async with store, open_runtime() as rt:
        root = rt.client("root")
        refs, logs = [], []
        for name, cls in (("fast", HistoryStore), ("general", GeneralStore)):
            log = await store.open_thread(name, owner="test")
            logs.append(log)
            refs.append(await rt.spawn(
                lambda cls=cls, name=name, log=log: cls(name, log, CONVERTER, COUNTER, limits=limits),
                ActorId("history", name), capabilities=HISTORY_CAPABILITIES))
        async with rt.open_subscription(history_topic("fast")) as fast_events, \
                rt.open_subscription(history_topic("general")) as general_events:
            for op, arg in ops:
                replies = []
                for ref in refs:
                    request = await _request(root, ref, op, arg)
                    if request is None:
                        replies.append("nothing to ask")
                        continue
                    try:
                        replies.append(_plain(await root.ask(ref, request)))
                    except Exception as exc:  # noqa: BLE001 - the same refusal from both
                        replies.append(f"{type(exc).__name__}: {exc}")
                assert replies[0].replace("fast", "general") == replies[1], (op, arg)
                instance = actor_instance(refs[0])
                assert instance._tail() == instance._fresh_tail()
                newest = [e for e in instance.state.entries if not isinstance(e, RecapEntry)][-1:]
                assert instance.state.last is (newest[0] if newest else None)
            await trio.testing.wait_all_tasks_blocked()
            published = []
            for events in (fast_events, general_events):
                seen = []
                while True:
                    try:
                        envelope = events.receive_nowait()
                    except trio.WouldBlock:
                        break
                    seen.append(_plain(envelope.payload).replace("fast", "general"))
                published.append(seen)
            assert published[0] == published[1]
        written = [[(r.seq, r.sender.replace("fast", "general"), r.kind, _TIME.sub("<time>", r.payload))
                    for r in await log.read(1)] for log in logs]
        assert written[0] == written[1]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_OPS, limits=_LIMITS)
@example(ops=[("step", 0)] * 4 + [("fold", 3), ("step", 0)], limits=HistoryLimits(max_entries=4))
def test_a_store_taking_its_shortcuts_answers_publishes_and_writes_what_the_general_path_does(
    ops: list[tuple[str, Any]], limits: HistoryLimits | None
) -> None:
    trio.run(_run, ops, limits)
