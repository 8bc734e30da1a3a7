"""A thread resumed as it ran: the settings its log recorded (``ThreadConfigured``) are taken
for every one not given again, and each one given that changes what was recorded is said in
one line.

What counts as *given* is the caller's to say: a command-line flag typed (click's
``ParameterSource``), a keyword of :func:`~livecontext.open_agent` passed, every key of a
blueprint. A setting a thread never recorded (a log written before threads recorded it) is
left as given, defaults included, and nothing is said of it.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping
from typing import Any, cast

import attrs

from livecontext.protocol.records import ThreadConfigured
from livecontext.runtime.models import Price

from ._agent import AgentSettings
from ..analyzers import AnalyzerSettings
from ..apps import importable
from ..engine import ApprovalPolicy, import_check
from ..history import ContextPolicy, HistoryLimits
from ..recap import RecapSettings
from ..spend import SpendLimits

SETTINGS = ("budget", "context", "limits", "recap", "analyzers", "spend", "pin_task", "lifecycle", "approval")
"""The :class:`AgentSettings` a thread records and resumes with, in the order changes are said."""


def recorded_values(recorded: ThreadConfigured) -> dict[str, object]:
    """The settings ``recorded`` holds, by name, as :class:`AgentSettings` holds them (a name
    the thread did not record is missing).

    Raises:
        UsageError: a recorded value is not a usable setting (the log was written by hand).
    """
    values: dict[str, object] = {"budget": recorded.budget}
    if recorded.context is not None:
        values["context"] = ContextPolicy.of(recorded.context)
    s = recorded.settings
    if s is None:
        return values
    limits, recap, spend = s.limits, s.recap, s.spend
    values["limits"] = None if limits is None else HistoryLimits(
        limits.max_entries, limits.max_tokens, limits.max_bytes, limits.soft, limits.hard, limits.truncate)
    values["recap"] = None if recap is None else RecapSettings(
        recap.strategy, recap.window, recap.batch, recap.max_summary_chars, recap.budget, recap.max_retries)
    values["analyzers"] = tuple(AnalyzerSettings(a.name, a.kind, a.trigger, a.period_s, a.prompt, a.threshold,
                                                 a.window, a.capabilities) for a in s.analyzers)
    values["spend"] = None if spend is None else SpendLimits(
        spend.max_input_tokens, spend.max_output_tokens, spend.max_cost,
        {p.model: Price(p.input, p.cached_input, p.output) for p in spend.prices})
    values["pin_task"] = s.pin_task
    values["lifecycle"] = s.lifecycle
    with importable(s.folder):
        check = import_check(s.approval_policy) if s.approval_policy else None
    values["approval"] = ApprovalPolicy(s.approval, check, s.approval_policy)
    return values


def recorded_models(recorded: ThreadConfigured | None) -> tuple[str | None, dict[str, str]]:
    """The specs of the recap's and the analyzers' models a thread recorded (``None``, and no
    analyzer: none recorded)."""
    s = recorded.settings if recorded is not None else None
    if s is None:
        return None, {}
    recap = s.recap.model if s.recap is not None and s.recap.model else None
    return recap, {a.name: a.model for a in s.analyzers if a.model}


def resumed_settings(recorded: ThreadConfigured | None, settings: AgentSettings,
                     given: Collection[str]) -> AgentSettings:
    """``settings`` with the recorded value of every setting (of :data:`SETTINGS`) not in
    ``given``; a new thread (``recorded`` ``None``) keeps ``settings``.

    Raises:
        UsageError: a recorded value is not a usable setting.
    """
    if recorded is None:
        return settings
    taken: dict[str, Any] = {name: value for name, value in recorded_values(recorded).items() if name not in given}
    return attrs.evolve(settings, **taken)


def resume(recorded: ThreadConfigured | None, settings: AgentSettings,
           given: Mapping[str, str]) -> tuple[AgentSettings, tuple[str, ...]]:
    """:func:`resumed_settings` and what they change (:func:`changed_settings`): the settings a
    thread runs with and a line for each one ``given`` that changes it."""
    resumed = resumed_settings(recorded, settings, given)
    return resumed, changed_settings(recorded, resumed, given)


def changed_settings(recorded: ThreadConfigured | None, settings: AgentSettings,
                     given: Mapping[str, str]) -> tuple[str, ...]:
    """One line for each setting ``settings`` runs the thread with that differs from what it
    recorded, naming how it was given (``given[name]``: ``--budget``, ``budget=``...):
    ``thread lake-trip: budget 4000 -> 8000 (--budget)``. Nothing for a new thread, for a
    setting the thread did not record, or for one not in ``given``.

    Raises:
        UsageError: a recorded value is not a usable setting.
    """
    if recorded is None:
        return ()
    was = recorded_values(recorded)
    lines = []
    for name in SETTINGS:
        if name not in given or name not in was:
            continue
        old, new = was[name], getattr(settings, name)
        if old != new:
            lines.append(f"thread {settings.thread_id}: {name.replace('_', ' ')} {said(old)} -> {said(new)} "
                         f"({given[name]})")
    return tuple(lines)


NAMING = frozenset({"name", "policy", "strategy"})
"""Fields said bare, whatever their value (an analyzer's name, a policy, a recap's strategy)."""


def said(value: object) -> str:
    """A setting's value in a line: a number, ``on``/``off``, ``none``, or a settings
    object's fields that differ from their defaults (``max_entries=8 soft=0.5``)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, ApprovalPolicy):
        parts = sorted(value.names) + ([value.path or "a function"] if value.check is not None else [])
        return "[" + ", ".join(parts) + "]" if parts else "none"
    if isinstance(value, tuple):
        return "[" + ", ".join(said(v) for v in value) + "]" if value else "none"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {said(v)}" for k, v in value.items()) + "}"
    if attrs.has(type(value)):
        parts = []
        for f in attrs.fields(cast("type[attrs.AttrsInstance]", type(value))):
            v = getattr(value, f.name)
            factory = getattr(f.default, "factory", None)
            default = factory() if factory is not None else f.default
            if f.name in NAMING:
                parts.append(said(v))
            elif v != default:
                parts.append(f"{f.name}={said(v)}")
        return " ".join(parts) if parts else "defaults"
    return str(value)
