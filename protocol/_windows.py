"""The apps' windows as a thread's model calls showed them, recorded as data.

A thread's apps are made by the user's code; looking into the thread later (``render``,
``state``, ``trace``) must not need that code. So the history store records, at a model
call, each user app's window (and its state text, for an app that saves one) whenever it
changed since the last one recorded: a thread whose app cannot be imported any more is still
shown as its model saw it. The built-in apps' windows are not recorded: their code is always
here to rebuild them from their effects.

A window that grows with each step (a list of every item) would be written whole again at
each call, so an app's window is recorded either whole (:class:`AppWindowsRecorded`) or as a
change of the one recorded before it (:class:`AppWindowsChanged`: the characters kept at its
start and end, and what is between them). A whole copy is written at least every
:data:`WHOLE_EVERY` records of an app (and whenever the change would be no shorter), so
rebuilding an app's window as of any seq replays a bounded number of changes (a snapshot of
the thread holds each window whole, too). Records written before changes existed are whole
copies, and read as they always did.
"""

from __future__ import annotations

from attrs import frozen

from ._content_wire import common_prefix, common_suffix
from ._errors import MalformedDataError
from ._message import Message

WHOLE_EVERY = 50
"""An app's window is recorded whole at least once in this many records of it: reading it
as of a seq applies at most this many changes (each a few string slices) to a whole copy."""


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
class TextChange:
    """A text as a change of the one before it: that one's first :attr:`head` and last
    :attr:`tail` characters (Unicode code points), with :attr:`middle` between them."""

    size: int
    """How many characters the text before has: a change read against another text (a
    record lost in between) is refused rather than misapplied."""
    head: int
    """Characters kept from the start of the text before."""
    tail: int
    """Characters kept from the end of the text before."""
    middle: str
    """What is between them now."""

    @classmethod
    def between(cls, before: str, after: str) -> TextChange:
        """The change that makes ``after`` of ``before``."""
        head = common_prefix(before, after)
        tail = common_suffix(before, after, min(len(before), len(after)) - head)
        return cls(len(before), head, tail, after[head : len(after) - tail])

    def fits(self, before: str) -> bool:
        """Whether this change was made of a text as long as ``before``."""
        return len(before) == self.size and 0 <= self.head and 0 <= self.tail and self.head + self.tail <= self.size

    def applied(self, before: str) -> str:
        """The text this change makes of ``before`` (the text it was made of: see :meth:`fits`)."""
        return before[: self.head] + self.middle + before[len(before) - self.tail :]


@frozen
class AppWindowChange:
    """One app's window and state text as changes of the ones recorded before them."""

    app: str
    """The app's name."""
    window: TextChange
    """The window's change."""
    state: TextChange | None = None
    """The state text's change (``None``: the app saves no state, as before)."""

    @classmethod
    def between(cls, before: AppWindow, after: AppWindow) -> AppWindowChange | None:
        """The change that makes ``after`` of ``before``; ``None`` where it cannot be written
        as one (the app saves a state now and did not before, or the other way)."""
        if (before.state is None) != (after.state is None):
            return None
        state = None
        if before.state is not None and after.state is not None:
            state = TextChange.between(before.state, after.state)
        return cls(after.app, TextChange.between(before.window, after.window), state)

    def chars(self) -> int:
        """The characters this change writes (to weigh it against a whole copy)."""
        return len(self.window.middle) + (len(self.state.middle) if self.state is not None else 0)

    def fits(self, before: AppWindow) -> bool:
        """Whether this change was made of ``before`` (as far as its sizes tell)."""
        if not self.window.fits(before.window):
            return False
        if self.state is None or before.state is None:
            return self.state is None and before.state is None
        return self.state.fits(before.state)

    def applied(self, before: AppWindow) -> AppWindow:
        """The window and state this change makes of ``before`` (see :meth:`fits`)."""
        state = self.state.applied(before.state) if self.state is not None and before.state is not None else None
        return AppWindow(self.app, self.window.applied(before.window), state)


@frozen
class AppWindowsRecorded(Message):
    """The windows of the apps whose window or state changed since the last record, as the
    model call made at this seq showed them (the others are as last recorded), each whole."""

    windows: tuple[AppWindow, ...]


@frozen
class AppWindowsChanged(Message):
    """The windows of the apps whose window or state changed since the last record, as the
    model call made at this seq showed them, each as a change of the one recorded before it
    (a call whose other apps are recorded whole writes an :class:`AppWindowsRecorded` too)."""

    changes: tuple[AppWindowChange, ...]


WindowRecord = AppWindowsRecorded | AppWindowsChanged
"""The records the history store writes for the apps' windows."""


def unstructure_text_change(change: TextChange) -> list[object]:
    """A :class:`TextChange` as written: ``[size, head, middle, tail]`` (one of these per
    app and model call: its keys would cost more than what it changes)."""
    return [change.size, change.head, change.middle, change.tail]


def structure_text_change(data: object) -> TextChange:
    """A :class:`TextChange` from ``[size, head, middle, tail]``.

    Raises:
        MalformedDataError: ``data`` is not of that form.
    """
    if isinstance(data, list) and len(data) == 4:
        size, head, middle, tail = data
        if (all(type(n) is int and n >= 0 for n in (size, head, tail)) and isinstance(middle, str)
                and head + tail <= size):
            return TextChange(size, head, tail, middle)
    raise MalformedDataError("TextChange", f"a text change is [size, head, middle, tail] (three counts and a "
                             f"string, head + tail at most size), not {data!r}")
