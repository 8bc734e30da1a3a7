"""The fold of a thread's records into its state: what it keeps to answer cheaply."""

from __future__ import annotations

import datetime as dt

import pytest

from livecontext.actors.history import HistoryState
from livecontext.actors.history._state import FoldError
from livecontext.protocol import (
    ActorId,
    EntriesFolded,
    EntryAppended,
    HistoryEdited,
    HistoryEntry,
    ModelInputEntry,
    RecapEntry,
    Retention,
)
from tests.actors.agent_harness import counter

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
    with pytest.raises(FoldError, match="fold of unknown entry e7"):
        state.apply(2, EntriesFolded(recap, ("e1", "e7")))  # e1 is folded before e7 is missed
    assert state.seq == 1
    assert state.last is _scanned_last(state) and state.last.folded


def test_an_edit_record_that_would_change_an_entrys_kind_is_refused_leaving_the_entry_as_it_was() -> None:
    state = HistoryState("t")
    state.apply(1, EntryAppended(_entry(1)))
    recap = RecapEntry(id="e1", revision=2, author=ActorId("recap", "t"), created_at=NOW,
                       retention=Retention.CRITICAL, content=counter().content("r", "r", "r"), covers=())
    with pytest.raises(FoldError, match="edit of entry e1 in t would turn a ModelInputEntry into a RecapEntry"):
        state.apply(2, HistoryEdited((recap,)))
    assert state.entries == [_entry(1)] and state.recaps == []
