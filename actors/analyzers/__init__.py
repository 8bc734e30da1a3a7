"""Analyzer sub-agents: they read a thread's history and post notifications to it."""

from __future__ import annotations

from ._analyzers import (
    Analyzer,
    AnalyzerKind,
    AnalyzerSettings,
    AnalyzerTrigger,
    ModelAnalyzer,
    RepeatedFailures,
    UsageWatcher,
    make_analyzer,
)

__all__ = [
    "Analyzer",
    "AnalyzerKind",
    "AnalyzerSettings",
    "AnalyzerTrigger",
    "ModelAnalyzer",
    "RepeatedFailures",
    "UsageWatcher",
    "make_analyzer",
]
