"""Analyzer sub-agents: they read a thread's history and post notifications to it."""

from __future__ import annotations

from ._analyzers import (
    ANALYZER_KINDS,
    TRIGGERS,
    Analyzer,
    AnalyzerSettings,
    ModelAnalyzer,
    RepeatedFailures,
    UsageWatcher,
    make_analyzer,
)

__all__ = [
    "ANALYZER_KINDS",
    "TRIGGERS",
    "Analyzer",
    "AnalyzerSettings",
    "ModelAnalyzer",
    "RepeatedFailures",
    "UsageWatcher",
    "make_analyzer",
]
