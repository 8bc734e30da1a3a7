"""Fixtures for the event-log tests: a store URL per backend, records, and a way to damage them."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from livecontext.runtime.persistence import NewRecord, record_checksum
from livecontext.runtime.persistence.sqlite._compression import pack_text, unpack_text

T0 = dt.datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc)

MakeRecords = Callable[..., list[NewRecord]]


def url_for(backend: str, tmp_path: Path) -> str:
    """A fresh store URL of ``backend`` under ``tmp_path``."""
    if backend == "memory":
        return "memory:"
    if backend == "sqlite":
        return f"sqlite:{tmp_path / 'store.db'}"
    return f"jsonl:{tmp_path / 'store'}"


@pytest.fixture(params=["memory", "sqlite", "jsonl", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Every backend (``postgresql``: a fresh database of the session's throwaway cluster)."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("postgres_url"))
    return url_for(request.param, tmp_path)


@pytest.fixture(params=["sqlite", "jsonl", "postgresql"])
def durable_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The backends that keep data across opens."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("postgres_url"))
    return url_for(request.param, tmp_path)


@pytest.fixture
def make_records() -> MakeRecords:
    """``make_records(n, start=0)``: n distinct records whose payloads count from ``start``."""

    def make(n: int, start: int = 0, *, kind: str = "entry") -> list[NewRecord]:
        return [
            NewRecord(
                sender=f"actor-{i % 3}",
                sent_at=T0 + dt.timedelta(seconds=i),
                sent_mono_ns=1_000_000 + i,
                kind=kind,
                payload=json.dumps({"i": i, "text": f"record {i} ✓"}),
            )
            for i in range(start, start + n)
        ]

    return make


class Tamper:
    """Damages a durable store's files the way crashes and bit rot do."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.backend, _, path = url.partition(":")
        self.path = Path(path)

    @contextlib.contextmanager
    def _sql(self) -> Iterator[Callable[..., list[tuple[Any, ...]]]]:
        """``run(statement, params)`` in the SQL store's database, committed at the end (the
        statement's placeholders are ``?``, as SQLite's)."""
        if self.backend == "postgresql":
            import psycopg

            with psycopg.connect(self.url) as pg:
                def run_pg(statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
                    cur = pg.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]
                    return cur.fetchall() if cur.description else []
                yield run_pg
            return
        with sqlite3.connect(self.path) as conn:
            def run_sqlite(statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
                return conn.execute(statement, params).fetchall()
            yield run_sqlite

    def execute(self, statement: str) -> None:
        """Run ``statement`` in an SQL store's database (SQLite or PostgreSQL), as a stray
        tool or bit rot would change it."""
        with self._sql() as run:
            run(statement)

    def records_file(self, thread_id: str) -> Path:
        return self.path / thread_id / "records.jsonl"

    def _rewrite_line(
        self, thread_id: str, seq: int, edit: Callable[[dict], None], fix: bool
    ) -> None:
        file = self.records_file(thread_id)
        lines = file.read_bytes().split(b"\n")
        data = json.loads(lines[seq - 1])
        edit(data)
        if fix:
            data["checksum"] = _checksum(data, thread_id)
        lines[seq - 1] = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
        file.write_bytes(b"\n".join(lines))

    def corrupt_payload(self, thread_id: str, seq: int) -> None:
        """Change a record's payload without fixing its checksum."""
        if self.backend != "jsonl":
            with self._sql() as run:
                run("UPDATE records SET payload = '{\"evil\":1}' WHERE thread_id = ? AND seq = ?",
                    (thread_id, seq))
            return
        self._rewrite_line(thread_id, seq, lambda d: d.update(payload='{"evil":1}'), fix=False)

    def set_schema_version(self, thread_id: str, seq: int, version: int, checksum: str | None = None) -> None:
        """Give a record another schema version, with a matching checksum (or ``checksum``:
        a newer version may compute it otherwise)."""
        if self.backend != "jsonl":
            with self._sql() as run:
                (row,) = run(
                    "SELECT seq, thread_id, sender, sent_at, sent_mono_ns, kind, payload"
                    " FROM records WHERE thread_id = ? AND seq = ?",
                    (thread_id, seq),
                )
                names = ["seq", "thread_id", "sender", "sent_at", "sent_mono_ns", "kind", "payload"]
                data = dict(zip(names, row, strict=True))
                data["payload"] = unpack_text(data["payload"], "payload")
                data["schema_version"] = version
                run(
                    "UPDATE records SET schema_version = ?, checksum = ?"
                    " WHERE thread_id = ? AND seq = ?",
                    (version, checksum or _checksum(data, thread_id), thread_id, seq),
                )
            return
        self._rewrite_line(thread_id, seq, lambda d: d.update(schema_version=version), fix=True)
        if checksum is not None:
            self._rewrite_line(thread_id, seq, lambda d: d.update(checksum=checksum), fix=False)

    def flip_compressed_byte(self, thread_id: str, seq: int, *, table: str = "records") -> None:
        """SQLite: invert the middle byte of a compressed payload (``table="snapshots"``: of a
        snapshot's compressed state), as bit rot would."""
        column = "payload" if table == "records" else "state"
        with sqlite3.connect(self.path) as conn:
            (stored,) = conn.execute(
                f"SELECT {column} FROM {table} WHERE thread_id = ? AND seq = ?", (thread_id, seq)
            ).fetchone()
            assert isinstance(stored, bytes), f"the {column} at seq {seq} is not stored compressed"
            damaged = bytearray(stored)
            damaged[len(damaged) // 2] ^= 0xFF
            conn.execute(
                f"UPDATE {table} SET {column} = ? WHERE thread_id = ? AND seq = ?",
                (bytes(damaged), thread_id, seq),
            )

    def compress_other_text(self, thread_id: str, seq: int, text: str) -> None:
        """SQLite: store ``text``, compressed, as a record's payload, leaving its checksum."""
        packed = pack_text(text)
        assert isinstance(packed, bytes), "choose a text long enough to be stored compressed"
        with sqlite3.connect(self.path) as conn:
            conn.execute(
                "UPDATE records SET payload = ? WHERE thread_id = ? AND seq = ?",
                (packed, thread_id, seq),
            )

    def delete_record(self, thread_id: str, seq: int) -> None:
        """Remove a record."""
        if self.backend != "jsonl":
            with self._sql() as run:
                run("DELETE FROM records WHERE thread_id = ? AND seq = ?", (thread_id, seq))
            return
        file = self.records_file(thread_id)
        lines = file.read_bytes().split(b"\n")
        del lines[seq - 1]
        file.write_bytes(b"\n".join(lines))


def _checksum(data: dict, thread_id: str) -> str:
    return record_checksum(
        thread_id=thread_id,
        seq=data["seq"],
        sender=data["sender"],
        sent_at=dt.datetime.fromisoformat(data["sent_at"]),
        sent_mono_ns=data["sent_mono_ns"],
        kind=data["kind"],
        payload=data["payload"],
        schema_version=data["schema_version"],
    )


@pytest.fixture
def tamper(durable_url: str) -> Tamper:
    """A :class:`Tamper` for ``durable_url``."""
    return Tamper(durable_url)
