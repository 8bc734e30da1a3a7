"""Records, checksums, and their JSONL and SQLite encodings (round-trips with hypothesis)."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from livecontext.protocol import SCHEMA_VERSION, UnsupportedSchemaVersionError, dump_json, dump_standard_json
from livecontext.runtime.persistence import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidThreadIdError,
    NewRecord,
    StoredRecord,
    record_checksum,
)
from livecontext.runtime.persistence.jsonl._codec import (
    decode_record,
    decode_snapshot,
    encode_record,
    encode_snapshot,
    prefix_seq,
)
from livecontext.runtime.persistence.base._records import (
    check_thread_id,
    checksum_matches,
    Snapshot,
    rehome_snapshot,
    seal_records,
    seal_snapshot,
    snapshot_checksum,
    snapshot_damage,
    supported_version,
)
from livecontext.runtime.persistence.sqlite._tables import (
    _TABLES,
    INSERT_RECORD,
    RECORD_COLUMNS,
    record_from_row,
    record_to_row,
)

# Any text that can be stored: no lone surrogates (they are not UTF-8).
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
json_text = st.recursive(
    st.none() | st.booleans() | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=10,
).map(lambda value: json.dumps(value, ensure_ascii=False))
times = st.datetimes(
    min_value=dt.datetime(1, 1, 2),
    max_value=dt.datetime(9999, 12, 30),
    timezones=st.just(dt.timezone.utc),
)
new_records = st.builds(
    NewRecord,
    sender=text,
    sent_at=times,
    sent_mono_ns=st.integers(-(2**63), 2**63 - 1),
    kind=text,
    payload=json_text,
)
thread_ids = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30)


@settings(max_examples=150, deadline=None)
@given(thread_ids, st.integers(1, 10**12), st.lists(new_records, min_size=1, max_size=4))
def test_records_round_trip_through_jsonl_lines(
    thread_id: str, first: int, batch: list[NewRecord]
) -> None:
    sealed = seal_records(thread_id, first, batch)
    end = sealed[-1].seq
    for record in sealed:
        line = encode_record(record, end)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert prefix_seq(line[:32]) == record.seq
        assert decode_record(line[:-1]) == (record, end)
        record.verify()


@settings(max_examples=150, deadline=None)
@given(thread_ids, st.lists(new_records, min_size=1, max_size=4))
def test_records_round_trip_through_sqlite_rows(thread_id: str, batch: list[NewRecord]) -> None:
    sealed = seal_records(thread_id, 1, batch)
    conn = sqlite3.connect(":memory:")
    for statement in _TABLES.split(";"):
        conn.execute(statement)
    conn.executemany(INSERT_RECORD, [record_to_row(r) for r in sealed])
    rows = conn.execute(f"SELECT {RECORD_COLUMNS} FROM records ORDER BY seq").fetchall()
    assert [record_from_row(row) for row in rows] == sealed


json_values = json_text.map(json.loads)


@settings(max_examples=150, deadline=None)
@given(thread_ids, text, times, json_values)
def test_a_record_encoded_by_new_record_encoding_seals_as_the_same_text_would(
    thread_id: str, sender: str, sent_at: dt.datetime, value: object
) -> None:
    encoded = NewRecord.encoding(sender, sent_at, 7, "k", value)
    assert encoded == NewRecord(sender, sent_at, 7, "k", encoded.payload)
    assert json.loads(encoded.payload) == value
    assert seal_records(thread_id, 1, [encoded]) == seal_records(thread_id, 1, [NewRecord(
        sender, sent_at, 7, "k", dump_json(value))])


@pytest.mark.parametrize("sent_at", ["2025-01-01T00:00:00+00:00", 1735689600, None])
def test_a_record_encoded_with_a_time_that_is_not_a_datetime_is_refused_in_one_line(sent_at: object) -> None:
    with pytest.raises(InvalidRecordError, match=f"sent_at must be a datetime, got {type(sent_at).__name__}"):
        NewRecord.encoding("s", sent_at, 1, "k", {"a": 1})  # type: ignore[arg-type]


def test_a_value_with_a_lone_surrogate_is_still_refused_when_sealed() -> None:
    record = NewRecord.encoding("s", dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc), 1, "k", {"text": "\ud800"})
    with pytest.raises(InvalidRecordError, match="not valid UTF-8"):
        seal_records("t", 1, [record])


def test_a_value_orjson_cannot_encode_falls_back_to_checked_standard_json() -> None:
    record = NewRecord.encoding("s", dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc), 1, "k", {"n": 2**70})
    assert json.loads(seal_records("t", 1, [record])[0].payload) == {"n": 2**70}


@settings(max_examples=50, deadline=None)
@given(thread_ids, st.integers(1, 10**6), json_text)
def test_snapshots_round_trip_through_jsonl_lines(thread_id: str, seq: int, state: str) -> None:
    record = covered(thread_id, seq)
    snapshot = seal_snapshot(thread_id, seq, state, record.checksum)
    assert decode_snapshot(encode_snapshot(snapshot)[:-1]) == snapshot
    snapshot.verify(record)


def test_the_checksum_covers_every_field() -> None:
    fields = dict(
        thread_id="t",
        seq=1,
        sender="s",
        sent_at=dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc),
        sent_mono_ns=5,
        kind="k",
        payload="{}",
        schema_version=1,
    )
    base = record_checksum(**fields)
    assert len(base) == 64 and int(base, 16) >= 0
    changes = dict(
        thread_id="u",
        seq=2,
        sender="S",
        sent_at=dt.datetime(2025, 1, 1, 0, 0, 0, 1, tzinfo=dt.timezone.utc),
        sent_mono_ns=6,
        kind="K",
        payload="[]",
        schema_version=2,
    )
    for name, value in changes.items():
        assert record_checksum(**{**fields, name: value}) != base, name
    # Field boundaries are part of the encoding: moving text between fields changes it.
    assert record_checksum(**{**fields, "sender": "sk", "kind": ""}) != record_checksum(
        **{**fields, "sender": "s", "kind": "k"}
    )


def test_verify_names_the_seq_of_a_damaged_record() -> None:
    (record,) = seal_records(
        "t", 7, [NewRecord("s", dt.datetime.now(dt.timezone.utc), 1, "k", "{}")]
    )
    record.verify()
    with pytest.raises(
        CorruptRecordError,
        match=r"thread 't': the record at seq 7 is corrupt \(checksum mismatch\)",
    ):
        attrs.evolve(record, payload='{"x":1}').verify()
    newer = attrs.evolve(record, schema_version=4)
    with pytest.raises(UnsupportedSchemaVersionError,
                       match="thread 't': the record at seq 7 has unsupported schema version 4"):
        attrs.evolve(newer, checksum=record_checksum(**{f: getattr(newer, f) for f in CHECKSUMMED})).verify()


CHECKSUMMED = ("thread_id", "seq", "sender", "sent_at", "sent_mono_ns", "kind", "payload", "schema_version")


def test_a_schema_version_changed_by_a_damaged_byte_is_corruption_named_by_its_seq_not_a_newer_record() -> None:
    (record,) = seal_records("t", 7, [NewRecord("s", dt.datetime.now(dt.timezone.utc), 1, "k", "{}")])
    with pytest.raises(CorruptRecordError, match=r"thread 't': the record at seq 7 is corrupt \(its schema "
                       r"version reads 49, but its checksum is that of version 3: a damaged byte\)"):
        attrs.evolve(record, schema_version=49).verify()  # (SQLite's integer 3, one bit flipped)
    with pytest.raises(UnsupportedSchemaVersionError, match="thread 't': the record at seq 7 has unsupported "
                       "schema version 49 .*checksum does not match either.*or it is damaged: restore"):
        attrs.evolve(record, schema_version=49, payload='{"x":1}').verify()


def test_a_stored_record_holding_text_that_is_not_utf8_fails_verification_as_corrupt() -> None:
    # (what a JSONL line's "\\udc80" escape decodes to: the checksum cannot cover it)
    (record,) = seal_records("t", 1, [NewRecord("s", dt.datetime.now(dt.timezone.utc), 1, "k", "{}")])
    damaged = StoredRecord(1, "t", "s\udc80", record.sent_at, 1, "k", "{}", record.schema_version, record.checksum)
    assert not checksum_matches(damaged)
    with pytest.raises(CorruptRecordError, match=r"the record at seq 1 is corrupt \(checksum mismatch\)"):
        damaged.verify()


def test_times_are_kept_in_utc_to_the_microsecond() -> None:
    plus_two = dt.timezone(dt.timedelta(hours=2))
    record = NewRecord(
        "s", dt.datetime(2025, 1, 1, 12, 0, 0, 123456, tzinfo=plus_two), 1, "k", "{}"
    )
    assert record.sent_at == dt.datetime(2025, 1, 1, 10, 0, 0, 123456, tzinfo=dt.timezone.utc)
    assert record.sent_at.tzinfo is dt.timezone.utc
    (stored,) = seal_records("t", 1, [record])
    assert isinstance(stored, StoredRecord)
    assert decode_record(encode_record(stored, 1)[:-1])[0].sent_at == record.sent_at


def _reference_checksum(**fields: object) -> str:
    """The canonical encoding of the module doc, written the slow, obvious way."""
    import hashlib

    parts = [
        str(fields["schema_version"]), fields["thread_id"], str(fields["seq"]), fields["sender"],
        fields["sent_at"].astimezone(dt.timezone.utc).isoformat(timespec="microseconds"),  # type: ignore[attr-defined]
        str(fields["sent_mono_ns"]), fields["kind"], fields["payload"],
    ]
    h = hashlib.sha256(b"livecontext-record\0")
    for part in parts:
        data = part.encode("utf-8")  # type: ignore[union-attr]
        h.update(b"%d:" % len(data) + data)
    return h.hexdigest()


any_times = st.datetimes(
    min_value=dt.datetime(1, 1, 2),
    max_value=dt.datetime(9999, 12, 30),
    timezones=st.sampled_from([dt.timezone.utc, dt.timezone(dt.timedelta(hours=-5, minutes=-30)),
                               dt.timezone(dt.timedelta(0))]),
)


@settings(max_examples=300, deadline=None)
@given(thread_ids, st.integers(0, 2**63), text, any_times, st.integers(-(2**63), 2**63 - 1), text,
       st.text(max_size=60).filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)),
       st.integers(0, 5))
def test_the_record_checksum_is_the_canonical_encoding_of_the_module_doc(
    thread_id: str, seq: int, sender: str, sent_at: dt.datetime, mono: int, kind: str,
    payload: str, version: int,
) -> None:
    fields = dict(thread_id=thread_id, seq=seq, sender=sender, sent_at=sent_at, sent_mono_ns=mono,
                  kind=kind, payload=payload, schema_version=version)
    assert record_checksum(**fields) == _reference_checksum(**fields)


@settings(max_examples=300, deadline=None)
@given(any_times)
def test_stored_times_are_iso_8601_utc_with_microseconds(value: dt.datetime) -> None:
    from livecontext.runtime.persistence.base._time import format_time

    assert format_time(value) == value.astimezone(dt.timezone.utc).isoformat(timespec="microseconds")
    assert format_time(value.astimezone(dt.timezone.utc)).endswith("+00:00")


@settings(max_examples=150, deadline=None)
@given(thread_ids, text, any_times, st.integers(-(2**63), 2**63 - 1), text, json_values)
def test_a_sealed_record_carries_the_checksum_of_its_fields_in_utc_from_any_zone(
    thread_id: str, sender: str, sent_at: dt.datetime, mono: int, kind: str, value: object
) -> None:
    encoded = NewRecord.encoding(sender, sent_at, mono, kind, value)
    assert encoded._encoded is (dump_standard_json(value) is not None)
    made = NewRecord(sender, sent_at, mono, kind, encoded.payload)
    assert encoded == made and repr(encoded) == repr(made)  # (whether it was encoded here is no part of it)
    (stored,) = seal_records(thread_id, 3, [encoded])
    assert stored == StoredRecord(3, thread_id, sender, sent_at, mono, kind, encoded.payload, SCHEMA_VERSION,
                                  record_checksum(thread_id=thread_id, seq=3, sender=sender, sent_at=sent_at,
                                                  sent_mono_ns=mono, kind=kind, payload=encoded.payload,
                                                  schema_version=SCHEMA_VERSION))
    assert stored.sent_at.tzinfo is dt.timezone.utc
    stored.verify()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        stored.seq = 4  # type: ignore[misc]


def test_stored_times_stay_right_across_many_days_the_day_texts_kept_or_not() -> None:
    # format_time keeps the text of the days it formats (and starts afresh past a limit)
    from livecontext.runtime.persistence.base._time import format_time

    start = dt.datetime(2024, 2, 28, 23, 59, 59, 999999, tzinfo=dt.timezone.utc)
    for _ in range(2):
        for days in range(1500):
            value = start + dt.timedelta(days=days, microseconds=days)
            assert format_time(value) == value.isoformat(timespec="microseconds")


def test_a_utc_time_is_stored_as_given_and_other_zones_are_converted() -> None:
    utc_time = dt.datetime(2025, 1, 1, 12, tzinfo=dt.timezone.utc)
    assert NewRecord("s", utc_time, 1, "k", "{}").sent_at is utc_time
    zulu = dt.datetime(2025, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(0), "Z"))  # (equal to UTC, not it)
    converted = NewRecord("s", zulu, 1, "k", "{}").sent_at
    assert converted == zulu and converted.tzinfo is dt.timezone.utc and converted.tzname() == "UTC"
    paris = dt.datetime(2025, 1, 1, 13, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    for made in (NewRecord("s", paris, 1, "k", "{}"), NewRecord.encoding("s", paris, 1, "k", {})):
        assert made.sent_at == utc_time and made.sent_at.tzinfo is dt.timezone.utc
    assert NewRecord.encoding("s", utc_time, 1, "k", {}).sent_at is utc_time


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("not a record", "record 1 of the batch is a str, not a NewRecord"),
        (NewRecord(7, dt.datetime.now(dt.timezone.utc), 1, "k", "{}"),  # type: ignore[arg-type]
         "record 1 of the batch: sender must be a str"),
        (NewRecord("s", dt.datetime.now(dt.timezone.utc), 1, None, "{}"),  # type: ignore[arg-type]
         "record 1 of the batch: kind must be a str"),
        (NewRecord("s", dt.datetime.now(dt.timezone.utc), 1, "k", b"{}"),  # type: ignore[arg-type]
         "record 1 of the batch: payload must be JSON text (a str), got bytes"),
        (NewRecord("s", dt.datetime.now(dt.timezone.utc), 1, "k", "[1,"),
         "record 1 of the batch: payload is not valid JSON text ("),
        (NewRecord("s", dt.datetime.now(dt.timezone.utc), True, "k", "{}"),
         "record 1 of the batch: sent_mono_ns must be a 64-bit int, got True"),
        (NewRecord("s", dt.datetime.now(dt.timezone.utc), 1.0, "k", "{}"),  # type: ignore[arg-type]
         "record 1 of the batch: sent_mono_ns must be a 64-bit int, got 1.0"),
        (NewRecord("s", dt.datetime.now(dt.timezone.utc), 2**63, "k", "{}"),
         f"record 1 of the batch: sent_mono_ns must be a 64-bit int, got {2**63}"),
        (NewRecord("s", dt.datetime.now(dt.timezone.utc), -(2**63) - 1, "k", "{}"),
         f"record 1 of the batch: sent_mono_ns must be a 64-bit int, got {-(2**63) - 1}"),
        (NewRecord("s", dt.datetime.now(dt.timezone.utc), 1, "k\udc80", "{}"),
         "record 1 of the batch holds text that is not valid UTF-8"),
        (NewRecord("s", dt.datetime.now(dt.timezone.utc), 1, "k", '"\udc80"'),
         "record 1 of the batch: payload is not valid JSON text (str is not valid UTF-8"),
    ],
)
def test_sealing_refuses_a_bad_record_and_names_it(record: object, message: str) -> None:
    from livecontext.runtime.persistence import InvalidRecordError

    good = NewRecord("s", dt.datetime.now(dt.timezone.utc), 1, "k", "{}")
    with pytest.raises(InvalidRecordError) as caught:
        seal_records("t", 1, [good, record])  # type: ignore[list-item]
    assert str(caught.value).startswith(message)


def test_sealing_takes_the_first_and_last_64_bit_ints_as_the_monotonic_time() -> None:
    now = dt.datetime.now(dt.timezone.utc)
    sealed = seal_records("t", 1, [NewRecord("s", now, -(2**63), "k", "{}"), NewRecord("s", now, 2**63 - 1, "k", "{}")])
    assert [r.sent_mono_ns for r in sealed] == [-(2**63), 2**63 - 1]


def test_a_time_whose_zone_gives_no_offset_is_refused_as_having_no_time_zone() -> None:
    class Nowhere(dt.tzinfo):
        def utcoffset(self, when: dt.datetime | None) -> dt.timedelta | None:
            return None

    with pytest.raises(InvalidRecordError, match="has no time zone; pass an aware UTC datetime"):
        NewRecord("s", dt.datetime(2025, 1, 1, tzinfo=Nowhere()), 1, "k", "{}")


def test_only_new_record_encoding_can_vouch_for_a_payload_left_unchecked() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'encoded'"):
        NewRecord("s", dt.datetime.now(dt.timezone.utc), 1, "k", "{not json", encoded=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="takes 6 positional arguments but 7 were given"):
        NewRecord("s", dt.datetime.now(dt.timezone.utc), 1, "k", "{not json", True)  # type: ignore[call-arg]


def test_a_subclass_of_new_record_made_by_encoding_is_built_by_its_own_class() -> None:
    @attrs.frozen
    class Noted(NewRecord):
        note: str = "kept"

    record = Noted.encoding("s", dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc), 1, "k", {"a": 1})
    assert type(record) is Noted and record.note == "kept" and record.payload == '{"a":1}'
    (sealed,) = seal_records("t", 1, [record])
    assert sealed.payload == '{"a":1}'


def test_sealing_takes_an_int_subclass_as_the_monotonic_time() -> None:
    class Nanos(int):
        pass

    (stored,) = seal_records("t", 1, [NewRecord("s", dt.datetime.now(dt.timezone.utc), Nanos(5), "k", "[1]")])
    stored.verify()
    assert stored.sent_mono_ns == 5


def test_a_sealed_record_holds_its_checksum_as_an_ordinary_field_of_every_copy() -> None:
    (record,) = seal_records("t", 1, [NewRecord("s", dt.datetime.now(dt.timezone.utc), 1, "k", "{}")])
    expected = record_checksum(thread_id="t", seq=1, sender="s", sent_at=record.sent_at, sent_mono_ns=1, kind="k",
                               payload="{}", schema_version=record.schema_version)
    assert attrs.asdict(record)["checksum"] == expected
    assert attrs.astuple(record)[8] == expected  # (a copy made field by field, as a backend writes it)
    assert f"checksum='{expected}'" in repr(record)


@pytest.mark.parametrize("field", ["thread", "sender", "kind", "payload"])
def test_text_that_is_not_valid_utf8_is_refused_when_sealed_in_any_field(field: str) -> None:
    bad = "\ud800"
    texts = {"thread": "t", "sender": "s", "kind": "k", "payload": '"ok"'}
    texts[field] = json.dumps(bad, ensure_ascii=False) if field == "payload" else bad
    record = NewRecord(texts["sender"], dt.datetime.now(dt.timezone.utc), 1, texts["kind"], texts["payload"])
    with pytest.raises(InvalidRecordError, match=r"record 0 of the batch.* not valid UTF-8"):
        seal_records(texts["thread"], 1, [record])


# -- snapshots ---------------------------------------------------------------------------------------


def covered(thread_id: str, seq: int, payload: str = "{}") -> StoredRecord:
    """The record a snapshot of ``thread_id`` at ``seq`` covers (its last folded record)."""
    [record] = seal_records(thread_id, seq, [NewRecord("s", dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc), 1,
                                                       "k", payload)])
    return record


def test_a_snapshot_checksum_covers_each_part_and_verify_fails_when_one_changes() -> None:
    record = covered("t", 7)
    snapshot = seal_snapshot("t", 7, '{"entries":[]}', record.checksum)
    snapshot.verify(record)
    assert snapshot.checksum == snapshot_checksum("t", 7, '{"entries":[]}', SCHEMA_VERSION, record.checksum)
    changed = {"thread_id": "u", "seq": 8, "state": '{"entries":[1]}', "schema_version": 1}
    for name, value in changed.items():
        other = attrs.evolve(snapshot, **{name: value})
        with pytest.raises(CorruptRecordError, match="thread '.': the snapshot at seq .* is corrupt "
                                                     r"\(checksum mismatch: the snapshot is damaged"):
            other.verify(record)
        assert snapshot_checksum(other.thread_id, other.seq, other.state, other.schema_version,
                                 record.checksum) != snapshot.checksum
    # the parts' boundaries are encoded: moving text from one part to the next changes it
    assert snapshot_checksum("t1", 2, "{}", 1) != snapshot_checksum("t", 12, "{}", 1)
    assert snapshot_checksum("t", 2, "{}", 1, "ab") != snapshot_checksum("t", 2, "{}", 1)


def test_a_snapshot_does_not_verify_against_another_record_at_its_seq() -> None:
    record = covered("t", 3, '{"a": 1}')
    snapshot = seal_snapshot("t", 3, "{}", record.checksum)
    with pytest.raises(CorruptRecordError, match=r"the snapshot at seq 3 is corrupt \(checksum mismatch: the "
                                                 r"snapshot is damaged, or its log was changed under it\)"):
        snapshot.verify(covered("t", 3, '{"a": 2}'))


def test_a_snapshot_whose_record_is_damaged_names_the_record_and_one_whose_record_is_gone_names_itself() -> None:
    record = covered("t", 3)
    snapshot = seal_snapshot("t", 3, "{}", record.checksum)
    with pytest.raises(CorruptRecordError, match=r"the record at seq 3 is corrupt \(checksum mismatch\)"):
        snapshot.verify(attrs.evolve(record, payload='{"x": 1}'))
    with pytest.raises(CorruptRecordError, match=r"the snapshot at seq 3 is corrupt \(the record it covers is missing"):
        snapshot.verify(None)


def test_a_snapshot_is_called_damaged_only_when_the_fault_is_its_own() -> None:
    record = covered("t", 3)
    snapshot = seal_snapshot("t", 3, "{}", record.checksum)
    assert snapshot_damage(snapshot, record) is None
    changed = attrs.evolve(snapshot, state='{"a":1}')
    assert snapshot_damage(changed, record) == ("checksum mismatch: the snapshot is damaged, or its log was "
                                                "changed under it")
    # the fault lies elsewhere, and is reported when that is read: the record it covers is
    # missing or damaged, or a schema version is unknown to this build
    assert snapshot_damage(changed, None) is None
    assert snapshot_damage(changed, attrs.evolve(record, payload='{"x":1}')) is None
    assert snapshot_damage(changed, attrs.evolve(record, schema_version=SCHEMA_VERSION + 1)) is None
    assert snapshot_damage(attrs.evolve(changed, schema_version=SCHEMA_VERSION + 1), record) is None


def test_only_the_schema_versions_this_build_reads_are_supported() -> None:
    assert supported_version(SCHEMA_VERSION)
    for version in (SCHEMA_VERSION + 1, 0, "1", None):
        assert not supported_version(version), version


def test_a_snapshot_whose_state_holds_text_that_is_not_utf8_fails_verification_as_damaged() -> None:
    # (what a JSONL line's "\udc80" escape decodes to: the checksum cannot cover it)
    record = covered("t", 2)
    snapshot = seal_snapshot("t", 2, '"a"', record.checksum)
    with pytest.raises(CorruptRecordError, match=r"the snapshot at seq 2 is corrupt \(checksum mismatch"):
        attrs.evolve(snapshot, state='"\udc80"').verify(record)


def test_a_snapshot_written_before_snapshots_covered_their_record_still_verifies() -> None:
    old = Snapshot("t", 4, "{}", 2, snapshot_checksum("t", 4, "{}", 2))
    old.verify(covered("t", 4))
    assert snapshot_damage(old, covered("t", 4)) is None
    assert snapshot_damage(attrs.evolve(old, state='{"a":1}'), covered("t", 4)) is not None


def test_a_snapshot_of_an_unknown_schema_version_is_refused_before_its_checksum_is_checked() -> None:
    snapshot = seal_snapshot("t", 1, "{}", covered("t", 1).checksum)
    with pytest.raises(UnsupportedSchemaVersionError, match="unsupported schema version 99"):
        attrs.evolve(snapshot, schema_version=99, checksum=snapshot_checksum("t", 1, "{}", 99)).verify(covered("t", 1))


def test_a_snapshot_moved_to_another_thread_verifies_there_and_keeps_its_state() -> None:
    snapshot = seal_snapshot("t", 3, '{"a":1}', covered("t", 3).checksum)
    there = covered("fork", 3)
    moved = rehome_snapshot(snapshot, "fork", there.checksum)
    moved.verify(there)
    assert (moved.thread_id, moved.seq, moved.state, moved.schema_version) == ("fork", 3, '{"a":1}', SCHEMA_VERSION)
    assert moved.checksum != snapshot.checksum


@pytest.mark.parametrize(("state", "message"), [
    ("{not json", "snapshot state is not valid JSON text"),
    (b"{}", "snapshot state must be JSON text \\(a str\\), got bytes"),
    ('"\udc80"', "snapshot state is not valid JSON text"),
])
def test_a_snapshot_whose_state_is_not_json_text_is_refused(state: object, message: str) -> None:
    with pytest.raises(InvalidRecordError, match=message):
        seal_snapshot("t", 1, state, "c")  # type: ignore[arg-type]


def test_a_snapshot_of_a_thread_id_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(InvalidRecordError, match=r"the snapshot's thread id 't\\udc80' is not valid UTF-8"):
        seal_snapshot("t\udc80", 1, "{}", "c")


# -- thread ids --------------------------------------------------------------------------------------


def test_a_thread_id_may_have_1_to_200_characters() -> None:
    for good in ("t", "x" * 200, "é" * 200):
        assert check_thread_id(good) == good
    for bad in ("", "x" * 201, "é" * 201):
        with pytest.raises(InvalidThreadIdError, match="use 1 to 200 characters"):
            check_thread_id(bad)


def test_a_thread_id_with_a_control_character_is_refused_and_any_other_character_taken() -> None:
    for bad in ("a\x00", "a\x1f", "a\nb", "a\x7f"):
        with pytest.raises(InvalidThreadIdError, match="control characters are not allowed"):
            check_thread_id(bad)
    for good in ("a b", "~", "main/sub:1", "✓"):
        assert check_thread_id(good) == good


def test_a_thread_id_holding_a_lone_surrogate_is_refused_as_not_utf8() -> None:
    with pytest.raises(InvalidThreadIdError, match="it is not valid UTF-8"):
        check_thread_id("t\udc80")


def test_a_thread_id_that_is_not_a_str_is_refused_naming_its_type() -> None:
    with pytest.raises(InvalidThreadIdError, match="expected a str, got bytes"):
        check_thread_id(b"t")
