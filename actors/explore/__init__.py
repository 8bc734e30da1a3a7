"""Exploring a system's interleavings: a system blueprint run under many seeds (``livecontext explore``).

:func:`explore_system` runs a system under one :class:`~livecontext.runtime.SteppingScheduler`
per seed (the seed picks the order of every delivery between actors: asks crossing,
notifications), optionally with faults at seeded points (a model error, a kill and resume),
checks each run's outcome (:class:`SystemOutcome`: every agent's final state, status and
history, and the system's answers) and groups the outcomes. :func:`write_trace_page` runs one
seed again and writes its ``livecontext trace`` page.
"""

from __future__ import annotations

from ._explore import (
    FAULTS,
    Check,
    ExploreError,
    SeedOutcome,
    SystemExploration,
    SystemOutcome,
    explore_system,
    load_check,
    load_inputs,
    run_system_seed,
    write_trace_page,
)

__all__ = [
    "FAULTS",
    "Check",
    "ExploreError",
    "SeedOutcome",
    "SystemExploration",
    "SystemOutcome",
    "explore_system",
    "load_check",
    "load_inputs",
    "run_system_seed",
    "write_trace_page",
]
