"""What the history store records of the apps' windows at a model call (see
``livecontext.protocol._windows``): each that changed, as a change of the one recorded
before it where that is shorter and the app's last whole copy is recent enough, else whole."""

from __future__ import annotations

from livecontext.protocol.kernel import Message
from livecontext.protocol.records import WHOLE_EVERY, AppWindow, AppWindowChange, AppWindowsChanged, AppWindowsRecorded

from ._state import HistoryState


def windows_records(state: HistoryState, apps: tuple[AppWindow, ...]) -> list[Message]:
    """The records of ``apps``' windows that changed since ``state`` recorded them (none if
    none did): each as a change of the one recorded before it, or whole when there is none,
    when :data:`WHOLE_EVERY` records of it have passed since its last whole copy (or how
    many is not known: after a snapshot), or when the change would write no fewer
    characters than the whole."""
    known, counts = state.windows, state.window_changes
    whole: list[AppWindow] = []
    changes: list[AppWindowChange] = []
    for window in apps:
        before = known.get(window.app)
        if before == window:
            continue
        change = None
        if before is not None and counts.get(window.app, WHOLE_EVERY) < WHOLE_EVERY - 1:
            change = AppWindowChange.between(before, window)
        if change is not None and change.chars() < len(window.window) + len(window.state or ""):
            changes.append(change)
        else:
            whole.append(window)
    records: list[Message] = []
    if whole:
        records.append(AppWindowsRecorded(tuple(whole)))
    if changes:
        records.append(AppWindowsChanged(tuple(changes)))
    return records
