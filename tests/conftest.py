"""Fixtures shared by every test folder: a throwaway PostgreSQL cluster (see
:mod:`tests.support.postgres`), started once per session when a test asks for it; and
hypothesis's settings for the whole suite.

Every property test draws the same examples on every run and every machine (``derandomize``:
seeded from the test function; no example database carried from one run to the next), so a
failure is reproduced by running the test again; and none depends on the clock (no
``deadline``, no ``too_slow`` health check: a loaded machine is slow, not wrong).
``HYPOTHESIS_PROFILE=explore`` draws fresh random examples instead, to look for new failures.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.support.postgres import Cluster, throwaway_cluster

settings.register_profile("reproducible", derandomize=True, database=None, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "reproducible"))


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
