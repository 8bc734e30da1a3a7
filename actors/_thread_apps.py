"""The apps of a recorded thread, rebuilt from its log: what ``render`` shows.

A thread records its apps by name and class (``ThreadConfigured``); an app's state is its
committed effects replayed, so the class, its latest saved state and the effects after it
as of any seq give the window the agent saw then. Rebuilding imports each app's module (as
recorded: ``module:qualname``), which also makes its effect classes known (an app's
``effects`` are registered when its class is defined), and makes the app with no arguments;
it runs none of the app's tools.
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Awaitable, Callable

from livecontext.protocol import (
    AppEffect,
    AppHistory,
    AppInfo,
    Message,
    ProtocolConverter,
    ProtocolError,
    UndecodedEffect,
    load_json,
)
from livecontext.runtime import UsageError

from .apps import App, AppDefinitionError, Notebook, ToolDefinitionError, make_app
from .history import HistoryState

log = logging.getLogger("livecontext.apps")

BUILTIN_SOURCES = {Notebook.name: f"{Notebook.__module__}:{Notebook.__qualname__}"}
"""Where the built-in apps come from, for threads recorded before they named their apps."""

Replay = Callable[[str], Awaitable[tuple[AppEffect, ...]]]
"""Every effect an app (named) committed, read from the log: for a saved state that cannot
be loaded."""


class AppRebuildError(UsageError):
    """An app of a recorded thread cannot be made again here (its class is not importable,
    or its committed effects cannot be applied)."""

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
    return tuple(AppInfo(name, BUILTIN_SOURCES[name]) for name in state.apps if name in BUILTIN_SOURCES)


async def rebuild_apps(state: HistoryState, converter: ProtocolConverter, replay: Replay) -> list[App]:
    """The thread's apps with their state as of ``state``: each loads its saved state, if
    any, and applies the effects after it; one that cannot load it applies all its effects
    (``replay``), and says so in the log.

    Raises:
        AppRebuildError: an app's class cannot be imported or made with no arguments, or one
            of its effects cannot be decoded or applied.
    """
    histories = {h.app: h for h in state.app_histories()}
    apps = []
    for info in thread_apps(state):
        app = make_recorded_app(state.thread_id, info)
        history = histories.get(info.name)
        if history is not None:
            if history.state is not None and not _loaded(state.thread_id, app, history):
                app = app.fresh()
                history = AppHistory(info.name, effects=await replay(info.name))
            for n, effect in enumerate(history.effects, start=history.saved + 1):
                try:
                    app.apply(_decoded(converter, state.thread_id, info, effect))
                except AppRebuildError:
                    raise
                except Exception as exc:  # noqa: BLE001 - any failure of the app's apply is reported as such
                    raise AppRebuildError(state.thread_id, info, f"applying its effect {n} failed "
                                          f"({type(exc).__name__}: {exc})") from None
        apps.append(app)
    return apps


def _loaded(thread_id: str, app: App, history: AppHistory) -> bool:
    assert history.state is not None
    try:
        app.load_state(history.state)
    except Exception as exc:  # noqa: BLE001 - any failure: the effects rebuild it all the same
        log.warning("thread %s: app %r cannot load its state saved as of its effect %d (%s: %s); "
                    "rebuilding it from every effect it committed", thread_id, app.name, history.saved,
                    type(exc).__name__, exc)
        return False
    return True


def _decoded(converter: ProtocolConverter, thread_id: str, info: AppInfo, effect: AppEffect) -> Message:
    """The effect, decoded now if it was not when read (its app's module is imported now)."""
    inner = effect.effect
    if not isinstance(inner, UndecodedEffect):
        return inner
    try:
        if effect.module and effect.module != "__main__":
            importlib.import_module(effect.module)
        return converter.load_message(load_json(inner.data))
    except (ImportError, ProtocolError) as exc:
        raise AppRebuildError(thread_id, info, f"its committed {inner.tag} effect cannot be decoded "
                              f"({type(exc).__name__}: {exc}); {effect.import_hint()}") from None


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
