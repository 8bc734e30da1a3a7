"""The apps' windows as a thread's model calls showed them, recorded as data.

A thread's apps are made by the user's code; looking into the thread later (``render``,
``state``, ``trace``) must not need that code. So the history store records, at a model
call, each user app's window (and its state text, for an app that saves one) whenever it
changed since the last one recorded: a thread whose app cannot be imported any more is still
shown as its model saw it. The built-in apps' windows are not recorded: their code is always
here to rebuild them from their effects.
"""

from __future__ import annotations

from attrs import frozen

from ._message import Message

__all__ = ["AppWindow", "AppWindowsRecorded", "WindowRecord"]


@frozen
class AppWindow:
    """One app's window as a model call showed it, and its state as text."""

    app: str
    """The app's name."""
    window: str
    """What :meth:`App.window` gave (``""``: the app shows none)."""
    state: str | None = None
    """What :meth:`App.state_text` gave (``None``: the app saves no state)."""


@frozen
class AppWindowsRecorded(Message):
    """The windows of the apps whose window or state changed since the last record, as the
    model call made at this seq showed them (the others are as last recorded)."""

    windows: tuple[AppWindow, ...]


WindowRecord = AppWindowsRecorded
"""The record the history store writes for the apps' windows (a channel of one)."""
