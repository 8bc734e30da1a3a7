"""The fold of a thread's records into its state: what it keeps to answer cheaply."""

from __future__ import annotations

import datetime as dt

import pytest

from livecontext.actors.history import HistoryState
from livecontext.actors.history._state import ReplayError
from livecontext.protocol.context import EntriesFolded, HistoryEdited
from livecontext.protocol.history import (
    HistoryEntry,
    ModelInputEntry,
    ModelOutputEntry,
    RecapEntry,
    Retention,
    ToolCall,
    ToolResult,
    ToolResultsEntry,
    ToolStatus,
)
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.records import EntryAppended, ToolResultRecorded, ToolResultsAppended
from tests.support.agent_harness import counter

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def _entry(n: int) -> ModelInputEntry:
    return ModelInputEntry(id=f"e{n}", revision=1, author=ActorId("engine", "t"), created_at=NOW,
                           retention=Retention.COMPRESSIBLE, content=counter().content("hi", "hi", "hi"),
                           text="hi")


def _scanned_last(state: HistoryState) -> HistoryEntry | None:
    return next((e for e in reversed(state.entries) if not isinstance(e, RecapEntry)), None)


def test_the_newest_entry_kept_for_a_seq_is_found_again_after_each_fold() -> None:
    state = HistoryState("t")
    assert state.last is None
    for seq in range(1, 4):
        state.apply(seq, EntryAppended(_entry(seq)))
        assert state.last is _scanned_last(state) is state.entries[-1]
        assert state.last is state.last
    recap = RecapEntry(id="e9", revision=1, author=ActorId("recap", "t"), created_at=NOW,
                       retention=Retention.CRITICAL, content=counter().content("r", "r", "r"), covers=("e1",))
    state.apply(4, EntriesFolded(recap, ("e3",)))  # a recap is never the newest entry; e3 is, folded
    assert state.last is _scanned_last(state) and state.last.folded and state.last.id == "e3"


def test_a_fold_failing_halfway_leaves_no_stale_newest_entry() -> None:
    state = HistoryState("t")
    state.apply(1, EntryAppended(_entry(1)))
    assert state.last is state.entries[0]
    recap = RecapEntry(id="e9", revision=1, author=ActorId("recap", "t"), created_at=NOW,
                       retention=Retention.CRITICAL, content=counter().content("r", "r", "r"), covers=("e1",))
    with pytest.raises(ReplayError, match="fold into a recap of unknown entry e7"):
        state.apply(2, EntriesFolded(recap, ("e1", "e7")))  # e1 is folded before e7 is missed
    assert state.seq == 1
    assert state.last is _scanned_last(state) and state.last.folded


def test_an_edit_record_that_would_change_an_entrys_kind_is_refused_leaving_the_entry_as_it_was() -> None:
    state = HistoryState("t")
    state.apply(1, EntryAppended(_entry(1)))
    recap = RecapEntry(id="e1", revision=2, author=ActorId("recap", "t"), created_at=NOW,
                       retention=Retention.CRITICAL, content=counter().content("r", "r", "r"), covers=())
    with pytest.raises(ReplayError, match="edit of entry e1 in t would turn a ModelInputEntry into a RecapEntry"):
        state.apply(2, HistoryEdited((recap,)))
    assert state.entries == [_entry(1)] and state.recaps == []


# -- a tool-results entry is built from the recorded results ------------------------------------------


def _output(n: int, *call_ids: str) -> ModelOutputEntry:
    return ModelOutputEntry(id=f"e{n}", revision=1, author=ActorId("engine", "t"), created_at=NOW,
                            retention=Retention.COMPRESSIBLE, content=counter().content("go", "go", "go"),
                            tool_calls=tuple(ToolCall(c, "bash", "{}") for c in call_ids))


def _result(call_id: str) -> ToolResult:
    return ToolResult(call_id, "bash", ToolStatus.OK, counter().content(f"out of {call_id}", f"out of {call_id}", "ok"))


def _results_entry(n: int, *results: ToolResult) -> ToolResultsEntry:
    return ToolResultsEntry(id=f"e{n}", revision=1, author=ActorId("engine", "t"), created_at=NOW,
                            retention=Retention.COMPRESSIBLE, content=counter().content("", "", ""),
                            results=results)


def _waiting_for_results(*recorded: str) -> HistoryState:
    """A state whose last output called c1 and c2, with the results of ``recorded`` recorded."""
    state = HistoryState("t")
    state.apply(1, EntryAppended(_entry(1)))
    state.apply(2, EntryAppended(_output(2, "c1", "c2")))
    for call_id in recorded:
        state.apply(state.seq + 1, ToolResultRecorded(_result(call_id)))
    return state


def test_a_results_record_folds_into_an_entry_holding_the_recorded_results_in_call_order() -> None:
    state = _waiting_for_results("c1", "c2")
    state.apply(5, ToolResultsAppended(_results_entry(3)))
    [entry] = [e for e in state.entries if isinstance(e, ToolResultsEntry)]
    assert entry.results == (_result("c1"), _result("c2"))
    assert state.recorded == [] and state.last is entry
    assert state.active_tokens == sum(e.content.recent.tokens for e in state.active) + sum(
        r.content.recent.tokens for r in entry.results)


def test_a_results_record_carrying_results_of_its_own_is_refused_and_changes_nothing() -> None:
    state = _waiting_for_results("c1", "c2")
    with pytest.raises(ReplayError, match=r"tool-results entry e3 at seq 5 of thread t carries 1 results of its own; "
                                        r"the record's results are the recorded ones"):
        state.apply(5, ToolResultsAppended(_results_entry(3, _result("c1"))))
    assert state.seq == 4 and len(state.recorded) == 2 and len(state.entries) == 2


def test_a_results_record_before_every_call_is_answered_is_refused() -> None:
    state = _waiting_for_results("c1")
    with pytest.raises(ReplayError, match=r"e3 at seq 4 of thread t follows model output e2, whose tool calls are "
                                        r"\['c1', 'c2'\], but the recorded results answer \['c1'\]"):
        state.apply(4, ToolResultsAppended(_results_entry(3)))
    assert state.seq == 3 and [r.call_id for r in state.recorded] == ["c1"]


def test_a_results_record_after_an_entry_that_made_no_call_is_refused() -> None:
    state = HistoryState("t")
    with pytest.raises(ReplayError, match=r"e1 at seq 1 of thread t is the first entry: there is no tool call"):
        state.apply(1, ToolResultsAppended(_results_entry(1)))
    state.apply(1, EntryAppended(_entry(1)))
    with pytest.raises(ReplayError, match=r"e2 at seq 2 of thread t follows model input e1, whose tool calls are \[\]"):
        state.apply(2, ToolResultsAppended(_results_entry(2)))
    state.apply(2, EntryAppended(_output(2)))  # an answer with no tool call
    with pytest.raises(ReplayError, match=r"follows model output e2, whose tool calls are \[\], but the recorded "
                                        r"results answer \[\]"):
        state.apply(3, ToolResultsAppended(_results_entry(3)))
    assert state.seq == 2 and len(state.entries) == 2


def test_a_results_entry_appended_as_format_v1_wrote_it_still_folds_with_its_own_results() -> None:
    state = _waiting_for_results("c1", "c2")
    state.apply(5, EntryAppended(_results_entry(3, _result("c1"), _result("c2"))))
    assert state.entries[-1] == _results_entry(3, _result("c1"), _result("c2"))
    assert state.recorded == [] and state.started == {}
