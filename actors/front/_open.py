"""The one way to build an agent: :func:`open_agent_from` an :class:`AgentSpec`.

:func:`~livecontext.open_agent` (its keywords), ``livecontext run`` and ``chat`` (a blueprint
and flags) and the batch runner (a blueprint per task) each make a spec and open it here, so
that a resumed thread is treated alike whoever opens it: a setting not given is the one it
recorded; one given that changes it is used, recorded, and said in one line.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import attrs
from attrs import frozen

from livecontext.protocol.agent import InputMode
from livecontext.protocol.records import ThreadConfigured
from livecontext.runtime import RuntimeClock, WallClock
from livecontext.runtime.models import ModelClient
from livecontext.runtime.persistence import EventStore

from ..agent import (
    AgentSettings,
    Session,
    SideModels,
    changed_settings,
    make_recorded_app,
    open_session,
    recorded_config,
    recorded_models,
    resumed_settings,
)
from ..analyzers import AnalyzerKind
from ..apps import App
from ..blueprint import AgentSpec, Blueprint, open_blueprint_models
from ..recap import RecapStrategy

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider


@frozen
class OpenedAgent:
    """An agent opened from a spec: its session and what it runs with."""

    session: Session
    settings: AgentSettings
    """The settings it runs with (a resumed thread's recorded ones where the spec gave none)."""
    model: str
    """The model spec it runs with (empty for a client given in Python)."""
    changed: tuple[str, ...] = ()
    """One line for each setting given that changes what the resumed thread recorded:
    ``thread lake-trip: budget 4000 -> 8000 (--budget)``."""
    notes: tuple[str, ...] = ()
    """One line if the model or the apps differ from the ones the resumed thread ran with."""


@asynccontextmanager
async def open_agent_from(spec: AgentSpec, *, base_url: str | None = None, api_key: str | None = None,
                          tracer_provider: TracerProvider | None = None,
                          input_mode: InputMode = InputMode.QUEUE,
                          clock: RuntimeClock = WallClock()) -> AsyncIterator[OpenedAgent]:
    """Open the agent ``spec`` describes: its side models, model, store, thread and actors;
    close them in order on exit.

    An existing thread resumes as it ran (see :class:`AgentSpec`). ``input_mode`` is the
    dispatch mode of the spec's inputs (not of its pins): ``run --input-mode``. ``clock`` is
    the runtime's (see :func:`~livecontext.runtime.open_runtime`).

    Raises:
        UsageError: a recorded setting is not usable, or see :func:`open_session`.
        AppRebuildError: a recorded app cannot be made again (give the apps in the spec).
        AppDefinitionError, ToolDefinitionError: an app or a tool of the spec cannot be made.
    """
    store: str | EventStore = spec.store if spec.store is not None else "memory:"
    recorded = await recorded_config(store, spec.thread)
    settings, changed = _settings(spec, recorded)
    model_spec = spec.model if isinstance(spec.model, str) else (
        "" if isinstance(spec.model, ModelClient) else (recorded.model if recorded is not None and recorded.model
                                                        else "echo"))
    notes = []
    if recorded is not None and recorded.model and model_spec and model_spec != recorded.model:
        notes.append(f"thread {spec.thread} ran with model {recorded.model}; it now runs with {model_spec}")
    apps, apps_note = _apps(spec, recorded, settings.folder)
    notes += apps_note
    side = _side_models(spec, settings, recorded)
    async with open_blueprint_models(side, base_url=base_url, api_key=api_key, clock=clock) as opened:
        recap_client = spec.recap_model if isinstance(spec.recap_model, ModelClient) else opened.recap
        analyzer_clients = {**opened.analyzers,
                            **{k: v for k, v in spec.analyzer_models.items() if isinstance(v, ModelClient)}}
        async with open_session(
                store, settings, model_spec or "echo", inputs=spec.inputs, pins=spec.pins,
                cut_oversized=spec.cut_oversized, input_mode=input_mode, base_url=base_url, api_key=api_key,
                apps=apps,
                model=spec.model if isinstance(spec.model, ModelClient) else None,
                side=SideModels(recap_client, analyzer_clients, side.recap_model or "", side.analyzer_models),
                tracer_provider=tracer_provider, clock=clock) as session:
            yield OpenedAgent(session, settings, model_spec, changed, tuple(notes))


def _settings(spec: AgentSpec, recorded: ThreadConfigured | None) -> tuple[AgentSettings, tuple[str, ...]]:
    """The settings the thread runs with and a line for each given one that changes it."""
    settings, labels = spec.settings()
    # (spend limits overridden alone apply to the recorded ones: they are not given whole)
    settings = spec.with_override(resumed_settings(recorded, settings, labels))
    if not spec.folder and recorded is not None and recorded.settings is not None:  # (imported from it again)
        settings = attrs.evolve(settings, folder=recorded.settings.folder)
    if spec.spend_override is not None:
        labels["spend"] = spec.label("spend")
    return settings, changed_settings(recorded, settings, labels)


def _apps(spec: AgentSpec, recorded: ThreadConfigured | None, folder: str) -> tuple[list[App], list[str]]:
    """The apps it runs with (a resumed thread's recorded ones, imported from ``folder`` too, if
    the spec gives none), and a note if they are not the ones it ran with."""
    if spec.apps is None and not spec.tools and not spec.mcp and recorded is not None and recorded.apps:
        return [make_recorded_app(spec.thread, info, folder) for info in recorded.apps], []
    apps = spec.make_apps()
    if recorded is not None and recorded.apps:
        was, now = [info.name for info in recorded.apps], [app.name for app in apps]
        if was != now:
            return apps, [f"thread {spec.thread} had apps {', '.join(was)}; it now has {', '.join(now)}"]
    return apps, []


def _side_models(spec: AgentSpec, settings: AgentSettings, recorded: ThreadConfigured | None) -> Blueprint:
    """The side models to open by spec: the spec's, else those the resumed thread recorded for
    the recap and the analyzers it runs that use a model (clients given are used as they are)."""
    recorded_recap, recorded_analyzers = recorded_models(recorded)
    recap: str | None
    if isinstance(spec.recap_model, str):
        recap = spec.recap_model
    elif spec.recap_model is None and settings.recap is not None and settings.recap.strategy is RecapStrategy.MODEL_SUMMARY:
        recap = recorded_recap
    else:
        recap = None
    specs: dict[str, str] = {}
    for a in settings.analyzers:
        given = spec.analyzer_models.get(a.name)
        if isinstance(given, str):
            specs[a.name] = given
        elif given is None and a.kind is AnalyzerKind.MODEL and a.name in recorded_analyzers:
            specs[a.name] = recorded_analyzers[a.name]
    return Blueprint(path="<spec>", settings=settings, recap_model=recap, analyzer_models=specs)
