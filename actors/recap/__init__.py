"""The recap maintainer: a bounded summary layer over a thread's oldest steps (seed note 004)."""

from __future__ import annotations

from ._maintainer import RecapMaintainer, RecapSettings, pick_batch, recap_topic, steps_of
from ._strategies import STRATEGIES, model_summary, simple_extract, structured

__all__ = [
    "STRATEGIES",
    "RecapMaintainer",
    "RecapSettings",
    "model_summary",
    "pick_batch",
    "recap_topic",
    "simple_extract",
    "steps_of",
    "structured",
]
