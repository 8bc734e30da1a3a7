"""The JSONL backend reads only what it needs: tails backwards, ranges by bisection."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from livecontext.runtime.persistence import NewRecord, open_store
from livecontext.runtime.persistence.jsonl import _files as _jsonl_files
from livecontext.runtime.persistence.jsonl._jsonl import dir_name
from livecontext.runtime.persistence.jsonl._files import iter_lines_backward

MakeRecords = Callable[..., list[NewRecord]]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.integers(1, 7))
def test_lines_read_backwards_are_the_lines_of_the_file(data: bytes, chunk: int) -> None:
    import tempfile

    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.flush()
        original = _jsonl_files.CHUNK
        _jsonl_files.CHUNK = chunk
        try:
            got = list(iter_lines_backward(f.fileno(), len(data)))
        finally:
            _jsonl_files.CHUNK = original
    expected_lines = data.split(b"\n")
    if data.endswith(b"\n"):
        expected_lines.pop()
    offsets = []
    pos = 0
    for line in expected_lines:
        offsets.append(pos)
        pos += len(line) + 1
    expected = [
        (offset, line, index < len(expected_lines) - 1 or data.endswith(b"\n"))
        for index, (offset, line) in enumerate(zip(offsets, expected_lines, strict=True))
    ]
    assert got == list(reversed(expected)) if data else got == []


async def test_ranges_are_found_by_bisection_in_a_long_log(
    tmp_path: Path, make_records: MakeRecords, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_jsonl_files, "BISECT_MIN", 512)
    monkeypatch.setattr(_jsonl_files, "CHUNK", 256)
    async with await open_store(f"jsonl:{tmp_path}") as store:
        async with await store.open_thread("t", owner="history") as log:
            written = []
            for start in range(0, 600, 7):
                written += await log.append(make_records(7, start))
            for from_seq, to_seq in [(1, 1), (1, 600), (2, 9), (300, 302), (599, 650), (601, 700)]:
                assert await log.read(from_seq, to_seq) == written[from_seq - 1 : to_seq]
        async with await store.open_reader("t") as reader:
            assert await reader.read(444, 445) == written[443:445]


async def test_opening_a_long_thread_reads_only_its_tail(
    tmp_path: Path, make_records: MakeRecords, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"jsonl:{tmp_path}"
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="history") as log:
            for start in range(0, 3000, 100):
                await log.append(make_records(100, start))
    size = (tmp_path / "t" / "records.jsonl").stat().st_size
    read_bytes = 0
    real_pread = os.pread

    def counting_pread(fd: int, n: int, offset: int) -> bytes:
        nonlocal read_bytes
        data = real_pread(fd, n, offset)
        read_bytes += len(data)
        return data

    monkeypatch.setattr(os, "pread", counting_pread)
    async with await open_store(url) as store:
        async with await store.open_thread("t", owner="history") as log:
            assert await log.last_seq() == 3000
            opened = read_bytes
            assert [r.seq for r in await log.read(2990)] == list(range(2990, 3001))
    print(f"file {size} bytes; open read {opened}; read(2990) read {read_bytes - opened}")
    assert size > 500_000
    assert opened <= 10_000
    assert read_bytes - opened <= 50_000


async def test_bytes_per_record_do_not_grow_with_the_thread(
    tmp_path: Path, make_records: MakeRecords
) -> None:
    file = tmp_path / "t" / "records.jsonl"
    async with await open_store(f"jsonl:{tmp_path}") as store:
        async with await store.open_thread("t", owner="history") as log:
            record = make_records(1)
            await log.append(record)
            first = file.stat().st_size
            for start in range(0, 2000, 100):
                await log.append(make_records(100, start))
            before = file.stat().st_size
            await log.append(record)
            last = file.stat().st_size - before
    assert last - first == 2 * (len("2002") - len("1"))  # only the digits of seq and end


def test_thread_directories_are_escaped_and_never_hidden() -> None:
    assert dir_name("agent-1") == "agent-1"
    assert dir_name("a/b c") == "a%2Fb%20c"
    assert dir_name("..") == "%2E."
    assert dir_name(".hidden") == "%2Ehidden"
