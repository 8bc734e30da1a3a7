"""The suite's random cases are the same on every run: its property tests draw the same
examples each time (tests/conftest.py's hypothesis profile), so a failure seen once is seen
again by running the test again."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st


def drawn() -> list[tuple[int, str]]:
    """The examples one property test draws."""
    seen: list[tuple[int, str]] = []

    @given(st.integers(), st.text())
    def record(number: int, text: str) -> None:
        seen.append((number, text))

    record()
    return seen


@pytest.mark.skipif(os.environ.get("HYPOTHESIS_PROFILE") == "explore", reason="explore draws fresh examples")
def test_a_property_test_draws_the_same_examples_on_every_run() -> None:
    first = drawn()
    assert len(first) > 10
    assert drawn() == first
