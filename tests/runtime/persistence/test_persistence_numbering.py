"""How records are numbered: seqs and system seqs when sealed, and a range of seqs as an SQL
store reads it back (every seq asked for, in order, or an error)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livecontext.runtime.persistence import CorruptRecordError, NewRecord, StoredRecord
from livecontext.runtime.persistence import record_checksum
from livecontext.runtime.persistence.base._records import contiguous, seal_records


WHEN = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)


def sealed(first: int, last: int) -> list[StoredRecord]:
    return seal_records("t", first, [NewRecord("s", WHEN, 1, "k", "{}") for _ in range(first, last + 1)])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 10**6), st.integers(1, 10**9), st.integers(1, 6))
def test_a_batch_sealed_for_a_system_takes_one_system_seq_a_record_from_the_first_given(
    first_seq: int, first_system_seq: int, size: int
) -> None:
    batch = [NewRecord("s", WHEN, k, "k", "{}") for k in range(size)]
    records = seal_records("t", first_seq, batch, first_system_seq)
    assert [r.seq for r in records] == list(range(first_seq, first_seq + size))
    assert [r.system_seq for r in records] == list(range(first_system_seq, first_system_seq + size))
    for r in records:
        assert type(r.system_seq) is int
        assert r.checksum == record_checksum(thread_id="t", seq=r.seq, sender="s", sent_at=WHEN, sent_mono_ns=r.sent_mono_ns,
                                             kind="k", payload="{}", schema_version=r.schema_version,
                                             system_seq=r.system_seq)
        r.verify()
    assert [r.system_seq for r in seal_records("t", first_seq, batch)] == [None] * size  # a thread of no system


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 50), st.integers(0, 20))
def test_a_whole_range_is_returned_as_it_was_read_whatever_its_ends(first: int, more: int) -> None:
    records = sealed(first, first + more)
    assert contiguous("t", first, first + more, iter(records)) == records


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 50), st.integers(1, 20), st.data())
def test_a_range_missing_a_record_is_refused_naming_the_first_one_missing(first: int, more: int,
                                                                          data: st.DataObject) -> None:
    records = sealed(first, first + more)
    gone = data.draw(st.integers(0, more), label="missing index")
    kept = records[:gone] + records[gone + 1:]
    with pytest.raises(CorruptRecordError, match=rf"^thread 't': the record at seq {first + gone} is corrupt "
                                                 r"\(the record is missing\)"):
        contiguous("t", first, first + more, kept)


@pytest.mark.parametrize("last", [2, 3])
def test_a_range_whose_last_record_is_missing_is_refused_whether_its_end_is_odd_or_even(last: int) -> None:
    with pytest.raises(CorruptRecordError, match=rf"the record at seq {last} is corrupt \(the record is missing\)"):
        contiguous("t", 1, last, sealed(1, last - 1))
