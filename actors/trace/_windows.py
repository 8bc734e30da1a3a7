"""The apps' windows at each model call of a recorded thread, kept up to date as the log is
replayed: each committed effect is applied once to apps made as the thread recorded them, so
a thread's whole trace costs one replay of its effects, not one per call."""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable

from livecontext.protocol.records import AppEffect, UndecodedEffect
from livecontext.protocol.wire import ProtocolConverter

from ..agent import AppRebuildError, ShownApps, rebuild_apps, shown_apps
from ..apps import App
from ..history import HistoryState


class WindowsUnknownWarning(UserWarning):
    """The apps of a traced thread cannot be made here: its model calls are shown without
    their windows (their totals still come from the renderer)."""


class WindowsRecordedWarning(UserWarning):
    """An app of a traced thread cannot be made here: its windows are shown as the thread
    recorded them."""


Replay = Callable[[str], Awaitable[tuple[AppEffect, ...]]]


class AppWindows:
    """The apps of one thread, as of the record replayed last."""

    def __init__(self, converter: ProtocolConverter, replay: Replay) -> None:
        self.converter = converter
        self.replay = replay
        self._apps: list[App] | None = None
        """``None``: to be rebuilt from the state when next asked (at first, and after the
        thread changed its apps or an effect could not be applied as it came)."""
        self._broken = False
        self._recorded = False
        """Some app cannot be made here: every app is shown as :func:`shown_apps` gives it."""
        self._text: str | None = None

    def configured(self) -> None:
        """The thread recorded its apps (again): make them anew when next asked."""
        self._apps, self._text, self._recorded = None, None, False

    def committed(self, effect: AppEffect) -> None:
        """Apply an effect the thread committed (after the state has it)."""
        if self._apps is None:
            return
        self._text = None
        app = next((a for a in self._apps if a.name == effect.app), None)
        inner = effect.effect
        if app is None or isinstance(inner, UndecodedEffect):
            self._apps = None  # (the rebuild decodes it, or says why it cannot)
            return
        try:
            app.apply(inner)
        except Exception:  # noqa: BLE001 - the rebuild says what failed, in its words
            self._apps = None

    async def text(self, state: HistoryState) -> str:
        """The windows as the app host joins them, as of ``state``; empty if the apps
        cannot be made here (said once, as a :class:`WindowsUnknownWarning`)."""
        if self._broken:
            return ""
        if self._text is not None:
            return self._text
        if self._recorded:  # (some app cannot be made here: as recorded, as of each call)
            return (await self._shown(state)).windows
        if self._apps is None:
            try:
                self._apps = await rebuild_apps(state, self.converter, self.replay)
            except AppRebuildError:
                self._recorded = True
                shown = await self._shown(state)
                for note in shown.notes:
                    warnings.warn(WindowsRecordedWarning(f"{note}; the trace shows the windows as recorded"),
                                  stacklevel=2)
                return shown.windows
        self._text = "\n\n".join(w for w in (app.window() for app in self._apps) if w)
        return self._text

    async def _shown(self, state: HistoryState) -> ShownApps:
        try:
            return await shown_apps(state, self.converter, self.replay)
        except AppRebuildError as exc:
            self._broken = True
            warnings.warn(WindowsUnknownWarning(f"{exc}; the trace shows its model calls without "
                                                "the apps' windows"), stacklevel=2)
            return ShownApps("", {})
