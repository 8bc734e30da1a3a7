"""The JSONL store's line formats: records, snapshots, and a thread's ``meta.json``.

A record line is one compact JSON object ending in ``\\n``, with ``seq`` first (so that a seq
can be read from a line's first bytes without decoding it), then ``end``: the seq of the
last record of the append batch the record was written in. A batch is committed once its
``end`` record is on disk, which is how a crash in the middle of a multi-record append is
told apart from a shorter batch. The other keys are the :class:`StoredRecord` fields;
``payload`` is kept as a JSON *string*, byte for byte; ``system_seq`` comes last, and only in
a record that has one (a record of a system's thread). Newlines inside values are always
escaped by JSON, so ``\\n`` only ever ends a line.
"""

from __future__ import annotations

import json
from typing import Any

from ..base import Snapshot, StoreFormatError, StoredRecord, ThreadInfo, format_time, parse_time

JSONL_FORMAT_VERSION = 2
"""The layout of a JSONL store's thread directories (the ``"format"`` in ``meta.json``).

Format 2 adds the record key ``system_seq`` (which an older build would call a malformed
line). A thread is format 1 while none of its records has a system seq (an older build reads
it still), and becomes format 2 before its first record with one is written."""
READABLE_JSONL_FORMATS = (1, 2)

_RECORD_KEYS = (
    "seq",
    "end",
    "thread_id",
    "sender",
    "sent_at",
    "sent_mono_ns",
    "kind",
    "payload",
    "schema_version",
    "checksum",
)
_RECORD_TYPES = (int, int, str, str, str, int, str, str, int, str)
_STAMPED_RECORD_KEYS = (*_RECORD_KEYS, "system_seq")
_STAMPED_RECORD_TYPES = (*_RECORD_TYPES, int)
_SNAPSHOT_KEYS = ("seq", "thread_id", "state", "schema_version", "checksum")
_SNAPSHOT_TYPES = (int, str, str, int, str)
_PARTED_SNAPSHOT_KEYS = (*_SNAPSHOT_KEYS, "parts")
_PARTED_SNAPSHOT_TYPES = (*_SNAPSHOT_TYPES, list)
_SEQ_PREFIX = b'{"seq":'


def _dump(data: dict[str, Any]) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _load(line: bytes, keys: tuple[str, ...], types: tuple[type, ...],
          stamped: tuple[tuple[str, ...], tuple[type, ...]] | None = None) -> dict[str, Any]:
    """The object on ``line``, with exactly ``keys`` of ``types``, or the ``stamped`` keys and
    types if given (else ``ValueError``)."""
    data = json.loads(line)
    if stamped is not None and isinstance(data, dict) and len(data) == len(stamped[0]):
        keys, types = stamped
    if not isinstance(data, dict) or tuple(data) != keys:
        raise ValueError("the line does not have the keys of a record")
    for key, kind in zip(keys, types, strict=True):
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(f"{key} is a {type(value).__name__}, not {kind.__name__}")
    return data


def encode_record(record: StoredRecord, end: int) -> bytes:
    """``record`` as one line, written in the batch whose last seq is ``end``."""
    data = {
        "seq": record.seq,
        "end": end,
        "thread_id": record.thread_id,
        "sender": record.sender,
        "sent_at": format_time(record.sent_at),
        "sent_mono_ns": record.sent_mono_ns,
        "kind": record.kind,
        "payload": record.payload,
        "schema_version": record.schema_version,
        "checksum": record.checksum,
    }
    if record.system_seq is not None:
        data["system_seq"] = record.system_seq
    return _dump(data)


def decode_record(line: bytes) -> tuple[StoredRecord, int]:
    """The record on ``line`` (without its newline) and its batch's ``end``; unchecked.

    Raises:
        ValueError: the line is not a well-formed record line.
    """
    data = _load(line, _RECORD_KEYS, _RECORD_TYPES, (_STAMPED_RECORD_KEYS, _STAMPED_RECORD_TYPES))
    if not 1 <= data["seq"] <= data["end"]:
        raise ValueError(f"seq {data['seq']} is outside its batch (which ends at {data['end']})")
    record = StoredRecord(
        seq=data["seq"],
        thread_id=data["thread_id"],
        sender=data["sender"],
        sent_at=parse_time(data["sent_at"]),
        sent_mono_ns=data["sent_mono_ns"],
        kind=data["kind"],
        payload=data["payload"],
        schema_version=data["schema_version"],
        checksum=data["checksum"],
        system_seq=data.get("system_seq"),
    )
    return record, data["end"]


def encode_snapshot(snapshot: Snapshot) -> bytes:
    """``snapshot`` as one line (with the key ``parts`` last, only if it has parts)."""
    data: dict[str, Any] = {
        "seq": snapshot.seq,
        "thread_id": snapshot.thread_id,
        "state": snapshot.state,
        "schema_version": snapshot.schema_version,
        "checksum": snapshot.checksum,
    }
    if snapshot.parts:
        data["parts"] = list(snapshot.parts)
    return _dump(data)


def decode_snapshot(line: bytes) -> Snapshot:
    """The snapshot on ``line``; unchecked. Raises ``ValueError`` if it is malformed."""
    data = _load(line, _SNAPSHOT_KEYS, _SNAPSHOT_TYPES, (_PARTED_SNAPSHOT_KEYS, _PARTED_SNAPSHOT_TYPES))
    parts = data.get("parts", [])
    if not all(isinstance(key, str) for key in parts):
        raise ValueError("parts holds something else than keys")
    return Snapshot(
        data["thread_id"], data["seq"], data["state"], data["schema_version"], data["checksum"], tuple(parts)
    )


def prefix_seq(head: bytes) -> int | None:
    """The seq at the start of a line (its first bytes suffice), or None if there is none."""
    if not head.startswith(_SEQ_PREFIX):
        return None
    comma = head.find(b",", len(_SEQ_PREFIX))
    digits = head[len(_SEQ_PREFIX) : comma]
    return int(digits) if comma > 0 and digits.isdigit() and len(digits) < 20 else None


def encode_meta(info: ThreadInfo, version: int = JSONL_FORMAT_VERSION) -> bytes:
    """A thread's ``meta.json``: its format, id, creation time and origin."""
    return _dump(
        {
            "format": version,
            "thread_id": info.thread_id,
            "created_at": format_time(info.created_at),
            "forked_from": info.forked_from,
            "forked_at": info.forked_at,
        }
    )


def decode_meta(data: bytes, path: str) -> tuple[ThreadInfo, int]:
    """The thread described by ``meta.json`` (``last_seq`` 0, ``last_activity`` its creation),
    and its format version.

    Raises:
        StoreFormatError: the thread directory has a format version this build does not read.
        ValueError: the file is malformed.
    """
    meta = json.loads(data)
    if not isinstance(meta, dict) or not isinstance(meta.get("format"), int):
        raise ValueError("meta.json has no format version")
    if meta["format"] not in READABLE_JSONL_FORMATS:
        raise StoreFormatError(
            path,
            f"its format is version {meta['format']}, this build reads versions "
            f"{READABLE_JSONL_FORMATS[0]} to {JSONL_FORMAT_VERSION}; upgrade livecontext to open it",
        )
    created = parse_time(meta["created_at"])
    forked_from = meta.get("forked_from")
    forked_at = meta.get("forked_at")
    return ThreadInfo(
        thread_id=str(meta["thread_id"]),
        last_seq=0,
        created_at=created,
        last_activity=created,
        forked_from=forked_from if isinstance(forked_from, str) else None,
        forked_at=forked_at if isinstance(forked_at, int) else None,
    ), meta["format"]
