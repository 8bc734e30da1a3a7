"""Fixtures for the durability tests."""

from __future__ import annotations

import pytest

from tests.support.command import run_cli


@pytest.fixture
def cli():  # type: ignore[no-untyped-def]
    """``await cli("state", "--store", url, ...)``: the finished process, output as text."""
    return run_cli


@pytest.fixture(params=["sqlite", "jsonl"])
def backend(request: pytest.FixtureRequest) -> str:
    """Each durable backend."""
    return str(request.param)
