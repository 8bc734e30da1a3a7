"""The recap maintainer: a bounded summary layer over a thread's oldest steps (seed note 004)."""

from __future__ import annotations

from ._facts import steps_of
from ._layer import Recap
from ._maintainer import RecapMaintainer, RecapSettings, batch_runs, pick_batch, recap_topic
from ._strategies import MIN_SUMMARY_CHARS, RecapStrategy, model_summary, simple_extract
from ._structured import structured

__all__ = [
    "MIN_SUMMARY_CHARS",
    "Recap",
    "RecapMaintainer",
    "RecapSettings",
    "RecapStrategy",
    "batch_runs",
    "model_summary",
    "pick_batch",
    "recap_topic",
    "simple_extract",
    "steps_of",
    "structured",
]
