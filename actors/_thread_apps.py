"""The apps of a recorded thread, rebuilt from its log: what ``render`` and ``state`` show.

A thread records its apps by name and class (``ThreadConfigured``); an app's state is a fold
of its committed effects, so the class and the effects as of any seq give the window the
agent saw then. Rebuilding imports each app's module (as recorded: ``module:qualname``) and
makes the app with no arguments; it runs none of the app's tools.
"""

from __future__ import annotations

import json

from livecontext.protocol import AppInfo
from livecontext.runtime import UsageError

from .apps import App, AppDefinitionError, Notebook, ToolDefinitionError, make_app
from .history import HistoryState

BUILTIN_SOURCES = {Notebook.name: f"{Notebook.__module__}:{Notebook.__qualname__}"}
"""Where the built-in apps come from, for threads recorded before they named their apps."""


class AppRebuildError(UsageError):
    """An app of a recorded thread cannot be made again here (its class is not importable)."""

    def __init__(self, thread_id: str, info: AppInfo, why: str) -> None:
        self.thread_id = thread_id
        self.app = info
        super().__init__(
            f"cannot rebuild app {info.name!r} of thread {thread_id!r} from {info.source}: {why}; "
            "run this where that class can be imported (the same environment as the agent)"
        )


def thread_apps(state: HistoryState) -> tuple[AppInfo, ...]:
    """The apps a thread has: as it recorded them, or, for a thread recorded before threads
    named their apps, the built-in apps with committed effects."""
    if state.config is not None:
        return state.config.apps
    return tuple(AppInfo(name, BUILTIN_SOURCES[name]) for name in state.app_effects if name in BUILTIN_SOURCES)


def rebuild_apps(state: HistoryState) -> list[App]:
    """The thread's apps with their state as of ``state`` (its effects applied).

    Raises:
        AppRebuildError: an app's class cannot be imported or made with no arguments.
    """
    apps = []
    for info in thread_apps(state):
        app = make_recorded_app(state.thread_id, info)
        effect = state.app_effects.get(info.name)
        if effect is not None:
            app.apply(effect)
        apps.append(app)
    return apps


def make_recorded_app(thread_id: str, info: AppInfo) -> App:
    """A new app as a thread recorded it (its state is not applied).

    Raises:
        AppRebuildError: it cannot be made here.
    """
    try:
        options = json.loads(info.options) if info.options else None
        app = make_app(info.source, options)
    except (AppDefinitionError, ToolDefinitionError, ValueError) as exc:
        raise AppRebuildError(thread_id, info, str(exc)) from None
    if app.name != info.name:
        raise AppRebuildError(thread_id, info, f"that class makes an app named {app.name!r}")
    return app
