"""livecontext's pytest plugin: fixtures to test your agents and systems.

Registered with pytest's ``pytest11`` entry point, so installing livecontext is all it takes;
it does nothing until a test asks for one of its fixtures or markers, and this module imports
neither Trio nor livecontext's runtime (pytest loads it in every session of an environment that
has livecontext installed, testing livecontext or not). Its fixtures run under pytest-trio
(``trio_mode = true``, or ``@pytest.mark.trio`` on the test):

- ``lc_clock``: a Trio ``MockClock``, autojump by default (virtual time jumps to the next
  deadline as soon as every task waits: a model's latency, a tool's delay, a timeout pass at
  once). Ask for it in the test's own arguments: pytest-trio makes it the run's clock.
  ``@pytest.mark.lc_clock(autojump=False)`` gives one that moves only when the test says.
- ``lc_agent``: ``agent = await lc_agent(model=..., tools=[...])`` opens an agent with
  ``livecontext.open_agent``'s keywords (or ``blueprint="agent.toml"``), on a ``memory:`` store
  unless ``store`` is given; every agent it opened is closed after the test.
- ``lc_system``: ``system = await lc_system("team.toml", models={...})`` opens a system with
  ``livecontext.open_system``'s arguments, on a ``memory:`` store unless ``store`` is given.
- ``lc_seed``: the seed of this run of the test. ``@pytest.mark.lc_seeds(200)`` (or an
  iterable of seeds) runs the test once per seed; a failing run prints the command that runs
  that seed alone (``--lc-seed N``). A seeded test's ``lc_system`` runs its system under a
  stepping scheduler of that seed (the seed decides how the agents' messages interleave);
  ``lc_seeds(..., stall_timeout=S)``: the seconds with nothing to deliver taken for a deadlock
  (5 by default).

Options: ``--lc-seed N`` runs every seeded test with seed ``N`` only; ``--lc-record`` records
model calls into the cassettes of ``cassette:`` models (``--lc-record=once``: only cassettes that
do not exist yet; ``--lc-record=none``: replay only, the default): see docs/testing.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

_RECORD_CHOICES = ("all", "once", "none")
_CASSETTE_ENV = "LIVECONTEXT_CASSETTE"
_saved_env = pytest.StashKey[str | None]()
"""The cassette mode the environment had before ``--lc-record`` set it (restored at the end)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("livecontext", "livecontext: testing agents")
    group.addoption("--lc-seed", type=int, default=None, metavar="N",
                    help="run every test marked lc_seeds with this seed only (replays a failing seed)")
    group.addoption("--lc-record", nargs="?", const="all", default=None, choices=_RECORD_CHOICES,
                    help="record the model calls of cassette: models into their cassettes (all), record "
                         "only cassettes that do not exist yet (once), or replay them only (none, the default)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "lc_seeds(seeds, stall_timeout=5.0): run the test once per seed (a number N: "
                                       "seeds 0..N-1; or an iterable of seeds); the test takes lc_seed, and "
                                       "its lc_system is scheduled by it")
    config.addinivalue_line("markers", "lc_clock(autojump=True): how lc_clock moves (autojump: to the "
                                       "next deadline whenever every task waits)")
    record = config.getoption("--lc-record")
    if record is not None:
        config.stash[_saved_env] = os.environ.get(_CASSETTE_ENV)
        os.environ[_CASSETTE_ENV] = {"all": "record", "once": "once", "none": "replay"}[record]
    if config.pluginmanager.has_plugin("trio"):  # (pytest-trio: our fixtures are Trio fixtures)
        from livecontext._pytest_fixtures import TrioFixtures

        config.pluginmanager.register(TrioFixtures(), "livecontext-fixtures")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _saved_env in config.stash:
        saved = config.stash[_saved_env]
        if saved is None:
            os.environ.pop(_CASSETTE_ENV, None)
        else:
            os.environ[_CASSETTE_ENV] = saved


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "lc_seed" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("lc_seeds")
    seeds = _seeds(marker.args[0] if marker is not None and marker.args else 1, metafunc.definition.nodeid)
    only = metafunc.config.getoption("--lc-seed")
    if only is not None:
        seeds = [only]
    metafunc.parametrize("lc_seed", seeds, ids=[f"seed{s}" for s in seeds])


def _seeds(given: Any, where: str) -> list[int]:
    if isinstance(given, int) and not isinstance(given, bool):
        if given < 1:
            raise pytest.UsageError(f"{where}: lc_seeds({given}) runs no seed; give a number of seeds >= 1 "
                                    "or an iterable of seeds")
        return list(range(given))
    if isinstance(given, Iterable) and not isinstance(given, (str, bytes)):
        seeds = list(given)
        if seeds and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
            return seeds
    raise pytest.UsageError(f"{where}: lc_seeds({given!r}) is not a number of seeds nor an iterable of "
                            "integer seeds")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    callspec = getattr(item, "callspec", None)
    if report.failed and callspec is not None and "lc_seed" in callspec.params:
        seed = callspec.params["lc_seed"]
        base = item.nodeid.split("[", 1)[0]
        report.sections.append(("livecontext", f"seed {seed} failed; run it alone with:\n"
                                               f"  pytest '{base}' --lc-seed {seed}"))
