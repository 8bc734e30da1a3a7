"""The virtual-time benchmark runs its system for the simulated span it is given (its wall time
is its output, not checked here)."""

from __future__ import annotations

import pytest

from benchmarks import bench_virtual_time


def test_the_virtual_time_benchmark_simulates_the_span_it_is_given_and_replays_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench_virtual_time.main(["--agents", "2", "--hours", "0.25", "--tool-s", "28"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("virtual time: 2 agents, 31 model calls each (2 s latency), tools sleeping 28 s")
    assert "simulated span (records' stamps)   0:15:00 (900 s)" in lines[1]
    assert lines[2].endswith("(the target is for 10 agents and one hour)")
    assert "same seed again: stamps, senders, kinds and payloads identical" in lines[4]
