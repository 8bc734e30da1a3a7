"""Fixtures shared by every test folder: a throwaway PostgreSQL cluster (see
:mod:`tests.support.postgres`), started once per session when a test asks for it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.postgres import Cluster, throwaway_cluster


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """A running cluster; skips the test where PostgreSQL is not installed, except in CI
    (``LIVECONTEXT_CI``, whose ``.ci/run`` installs it): there it fails."""
    try:
        with throwaway_cluster() as cluster:
            yield cluster
    except FileNotFoundError as exc:
        if os.environ.get("LIVECONTEXT_CI"):
            pytest.fail(f"{exc}: CI must run the PostgreSQL tests")
        pytest.skip(str(exc))


@pytest.fixture
def postgres_url(postgres_cluster: Cluster) -> Iterator[str]:
    """The URL of a fresh, empty database, dropped after the test."""
    name = postgres_cluster.new_database()
    yield postgres_cluster.url(name)
    postgres_cluster.drop_database(name)
