"""bench_window_records runs, and the windows' records of a growing window stay small."""

from __future__ import annotations

from benchmarks.bench_window_records import WINDOW_KINDS, payload_bytes, report


async def test_a_thread_whose_window_grows_records_it_mostly_as_changes() -> None:
    sizes = await payload_bytes(30)
    assert sizes["AppWindowsRecorded"][0] == 1 and sizes["AppWindowsChanged"][0] == 30
    windows = sum(b for kind, (_, b) in sizes.items() if kind in WINDOW_KINDS)
    everything = sum(b for _, b in sizes.values())
    assert windows < everything / 10
    assert report(sizes).endswith(f"windows: {windows:,} of {everything:,} payload bytes ({windows / everything:.1%})")
