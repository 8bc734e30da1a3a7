"""The apps of a recorded thread, rebuilt from its log: what ``render`` shows.

A thread records its apps by name and class (``ThreadConfigured``); an app's state is its
committed effects replayed, so the class, its latest saved state and the effects after it
as of any seq give the window the agent saw then. Rebuilding imports each app's module (as
recorded: ``module:qualname``), which also makes its effect classes known (an app's
``effects`` are registered when its class is defined), and makes the app with the
arguments it recorded (``AppInfo.options``); it runs none of the app's tools. Where an app
cannot be made, :func:`shown_apps` shows the window its thread recorded instead.
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Awaitable, Callable

from attrs import frozen

from livecontext.protocol.kernel import Message
from livecontext.protocol.records import AppEffect, AppHistory, AppInfo, AppWindow, UndecodedEffect
from livecontext.protocol.wire import ProtocolConverter, ProtocolError, load_json
from livecontext.runtime import UsageError

from ._host import recorded_app
from ..apps import App, AppDefinitionError, FunctionTools, Notebook, ToolDefinitionError, importable, load_object, make_app
from ..history import HistoryState

log = logging.getLogger("livecontext.apps")

BUILTIN_SOURCES = {Notebook.name: f"{Notebook.__module__}:{Notebook.__qualname__}"}
"""Where the built-in apps come from, for threads recorded before they named their apps."""

FUNCTION_TOOLS = f"{FunctionTools.__module__}:{FunctionTools.__qualname__}"
"""The app that offers plain function tools: no window, no state."""

Replay = Callable[[str], Awaitable[tuple[AppEffect, ...]]]
"""Every effect an app (named) committed, read from the log: for a saved state that cannot
be loaded."""


class AppRebuildError(UsageError):
    """An app of a recorded thread cannot be made again here (its class is not importable,
    or its committed effects cannot be applied)."""

    def __init__(self, thread_id: str, info: AppInfo, why: str) -> None:
        self.thread_id = thread_id
        self.app = info
        self.why = f"cannot rebuild app {info.name!r} of thread {thread_id!r} from {info.source}: {why}"
        super().__init__(
            f"{self.why}; run this where that class can be imported (from the folder the agent "
            "ran in, or with its package installed)"
        )


class ToolImportError(AppRebuildError):
    """A plain function tool of a recorded thread cannot be imported here: said as the user
    named it (``module:function``), not as the app that offers such tools."""

    def __init__(self, thread_id: str, info: AppInfo, path: str, why: str) -> None:
        super().__init__(thread_id, info, why)
        self.path = path
        self.why = f"{path} cannot be imported: {why}"
        self.args = (f"{self.why}; run from the folder that has it, or give --tool",)


def recorded_folder(state: HistoryState) -> str:
    """The folder a thread recorded its apps and tools were imported from (its blueprint's;
    ``""``: none)."""
    config = state.config
    return config.settings.folder if config is not None and config.settings is not None else ""


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
        AppRebuildError: an app's class cannot be imported or made with the arguments it
            was made with, or one of its effects cannot be decoded or applied.
    """
    histories = {h.app: h for h in state.app_histories()}
    return [await _rebuilt(state, converter, replay, info, histories.get(info.name)) for info in thread_apps(state)]


async def _rebuilt(state: HistoryState, converter: ProtocolConverter, replay: Replay, info: AppInfo,
                   history: AppHistory | None) -> App:
    app = make_recorded_app(state.thread_id, info, recorded_folder(state))
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
    return app


@frozen
class ShownApps:
    """A recorded thread's apps as inspection shows them, as of one seq."""

    windows: str
    """The windows, joined as the app host joins them."""
    states: dict[str, str | None]
    """Each app's state as text, by name: a user app's (:func:`shown_state`); ``None`` for
    a built-in app (its effects say it)."""
    notes: tuple[str, ...] = ()
    """One line for each app shown from its recorded window (it cannot be made here)."""
    rebuilt: frozenset[str] = frozenset()
    """The apps made here, their effects decoded (the others are shown as recorded)."""


def shown_state(window: AppWindow) -> str:
    """A user app's state as text: its :meth:`App.state_text`, else (it saves none) its
    window's body (what :meth:`App.view` gave)."""
    if window.state is not None:
        return window.state
    return window.window.removeprefix(f"[Window: {window.app}]\n")


async def shown_apps(state: HistoryState, converter: ProtocolConverter, replay: Replay) -> ShownApps:
    """The thread's apps' windows and states as of ``state``: each app made again here and
    rebuilt from its effects when its code can be imported, else as its thread recorded
    its window (:class:`AppWindowsRecorded`), with a note saying so. Plain function tools
    have no window: nothing of them is imported.

    Raises:
        AppRebuildError: an app cannot be made here and its thread recorded no window of it.
    """
    histories = {h.app: h for h in state.app_histories()}
    windows: list[str] = []
    states: dict[str, str | None] = {}
    notes: list[str] = []
    rebuilt: set[str] = set()
    for info in thread_apps(state):
        if info.source == FUNCTION_TOOLS:
            continue  # (no window, no state: the functions need not be importable)
        try:
            app = await _rebuilt(state, converter, replay, info, histories.get(info.name))
        except AppRebuildError as exc:
            recorded = state.windows.get(info.name)
            if recorded is None:
                raise
            notes.append(f"{exc.why}: app {info.name!r} is shown as its window was recorded "
                         f"(as of seq {state.windows_at})")
            shown = recorded
        else:
            rebuilt.add(app.name)
            shown = AppWindow(app.name, app.window(), app.state_text())
            if not recorded_app(app):
                windows.append(shown.window)
                states[app.name] = None
                continue
        windows.append(shown.window)
        states[info.name] = shown_state(shown)
    return ShownApps("\n\n".join(w for w in windows if w), states, tuple(notes), frozenset(rebuilt))


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


def make_recorded_app(thread_id: str, info: AppInfo, folder: str = "") -> App:
    """A new app as a thread recorded it (its state is not applied), its code imported from
    the current folder and ``folder`` (the one the thread recorded: its blueprint's).

    Raises:
        AppRebuildError: it cannot be made here.
    """
    try:
        options = json.loads(info.options) if info.options else None
        with importable(folder):
            if info.source == FUNCTION_TOOLS:
                _import_tools(thread_id, info, options)
            app = make_app(info.source, options)
    except (AppDefinitionError, ToolDefinitionError, ValueError) as exc:
        raise AppRebuildError(thread_id, info, str(exc)) from None
    if app.name != info.name:
        raise AppRebuildError(thread_id, info, f"that class makes an app named {app.name!r}")
    return app


def _import_tools(thread_id: str, info: AppInfo, options: object) -> None:
    """Import each plain function tool a thread recorded, so that one that cannot be is named
    as the user wrote it.

    Raises:
        ToolImportError: one of them cannot be imported.
    """
    paths = options.get("functions") if isinstance(options, dict) else None
    for path in paths if isinstance(paths, list) else []:
        if not isinstance(path, str):
            continue  # (make_app says what is wrong with it)
        try:
            load_object(path, "tool")
        except ToolDefinitionError as exc:
            why = str(exc).removeprefix(f"tool {path!r}: ")
            raise ToolImportError(thread_id, info, path, why) from None
