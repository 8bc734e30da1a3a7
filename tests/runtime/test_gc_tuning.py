"""The runtime's garbage-collector tuning: set while a runtime is open, restored after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from livecontext.runtime import GC_THRESHOLDS, gc_tuned, open_runtime


@pytest.fixture(autouse=True)
def _keep_thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


async def test_an_open_runtime_raises_the_thresholds_and_closing_it_restores_them() -> None:
    async with open_runtime():
        assert gc.get_threshold() == GC_THRESHOLDS
    assert gc.get_threshold() == (700, 10, 10)


async def test_tune_gc_false_leaves_the_thresholds_alone() -> None:
    async with open_runtime(tune_gc=False):
        assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


async def test_nested_runtimes_restore_the_thresholds_only_when_the_last_one_closes() -> None:
    async with open_runtime():
        async with open_runtime():
            assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_threshold() == GC_THRESHOLDS
    assert gc.get_threshold() == (700, 10, 10)


def test_thresholds_changed_by_someone_else_meanwhile_are_kept() -> None:
    with gc_tuned():
        gc.set_threshold(1234, 5, 6)
    assert gc.get_threshold() == (1234, 5, 6)


def test_the_thresholds_are_restored_when_the_block_raises() -> None:
    with pytest.raises(KeyError), gc_tuned((9000, 9, 9)):
        assert gc.get_threshold() == (9000, 9, 9)
        raise KeyError("x")
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("bad", [(0, 10, 10), (700, 10), (700, 10, True), (700.0, 10, 10)])
def test_bad_thresholds_are_refused_with_what_was_wrong(bad: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=r"gc thresholds must be three positive ints, got"):
        with gc_tuned(bad):  # type: ignore[arg-type]
            pass
    assert gc.get_threshold() == (700, 10, 10)



def test_a_command_leaves_the_thresholds_as_it_found_them_and_freezes_nothing() -> None:
    # the command line holds the runtime's one policy (gc_tuned) for the command, no other
    from click.testing import CliRunner

    from livecontext.actors.cli import main

    result = CliRunner().invoke(main, ["threads"], env={"LIVECONTEXT_STORE": "memory:"})
    assert result.exit_code == 0, result.output
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0
