"""The start-up benchmark runs (how long the commands take is its output, not checked here)."""

from __future__ import annotations

import pytest

from benchmarks import bench_startup


def test_the_start_up_benchmark_times_each_command_beside_its_target(capsys: pytest.CaptureFixture[str]) -> None:
    bench_startup.main(["--runs", "1", "--threads", "1"])
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split("[0]")[0].strip(): line for line in lines[2:]}
    assert list(rows) == ["python -c pass (the interpreter alone)", "livecontext --version", "livecontext --help",
                          "livecontext threads --store memory:", "livecontext threads --store sqlite: (1 thread)"]
    assert rows["livecontext --version"].endswith("target <= 0.3 s")
    assert rows["livecontext threads --store memory:"].endswith("target <= 0.6 s")
    assert "target" not in rows["livecontext --help"]
