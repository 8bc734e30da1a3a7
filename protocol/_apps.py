"""Effects of apps' tools: state changes committed to the log with the tool result.

An app's own effect classes hold only what changed (``Added(amount)``); the runtime wraps
each in an :class:`AppEffect` naming the app that made it and where its class lives, so the
log can route it back to its app and say what to import to read it.
"""

from __future__ import annotations

from attrs import Factory, frozen

from ._json import load_json
from ._message import Message, type_source


@frozen
class NotebookEdited(Message):
    """The Memory Notebook's text after an edit (an app's state is a fold of these).

    Stores written before effects were wrapped in :class:`AppEffect` also hold an ``app``
    key here (always ``"notebook``"); it is read and ignored.
    """

    text: str
    """The whole text after the edit."""


@frozen
class AppEffect(Message):
    """One effect of one app, as the runtime carries and commits it."""

    app: str
    """The name of the app whose tool made the effect (the app that applies it)."""
    effect: Message
    """The app's own effect (an :class:`UndecodedEffect` when read by a process that does
    not know its class)."""
    source: str = Factory(lambda self: _source(self.effect), takes_self=True)
    """Where the effect's class is defined (``module:qualname``): what a process must import
    to decode it (``""``: not known, for an effect stored before effects were wrapped)."""

    @property
    def module(self) -> str:
        """The module to import to decode the effect (``""``: not known)."""
        return self.source.partition(":")[0]

    def import_hint(self) -> str:
        """What a process that cannot decode the effect should do, in a few words."""
        tag = self.effect.tag if isinstance(self.effect, UndecodedEffect) else type(self.effect).__name__
        if not self.module:
            return f"import the module that defines {tag} to decode it"
        if self.module == "__main__":
            return (f"{tag} was defined in the __main__ script of the process that wrote it: define it "
                    "in an importable module to decode it elsewhere")
        return f"import {self.module} to decode it"


@frozen
class UndecodedEffect(Message):
    """An effect whose class this process does not know (its tag was never registered).

    It is kept as it was stored, so a process can carry it, show it and write it back
    unchanged (the converter writes :attr:`data` as it was); importing the module that
    defines the class (:attr:`AppEffect.source`) lets the same converter decode it.
    """

    tag: str
    """The effect's tag (its class name)."""
    data: str
    """The effect's JSON text as stored, its ``"type"`` included."""

    def fields(self) -> dict[str, object]:
        """The stored JSON, as an object."""
        loaded = load_json(self.data)
        return loaded if isinstance(loaded, dict) else {"value": loaded}


StoredEffect = AppEffect | UndecodedEffect | NotebookEdited
"""The effects the protocol itself knows: the wrapper, the one it cannot decode, the notebook's."""


@frozen
class AppHistory:
    """What an app's state is rebuilt from: its latest saved state and the effects after it.

    The app is rebuilt by :meth:`App.load_state` of :attr:`state` (when there is one) and
    :meth:`App.apply` of each of :attr:`effects`, in order.
    """

    app: str
    """The app's name."""
    state: str | None = None
    """The latest state the app saved (its ``state_text()``), or ``None``: none was saved,
    so the app starts empty."""
    saved: int = 0
    """How many of the app's committed effects :attr:`state` folds in (0 without a state)."""
    effects: tuple[AppEffect, ...] = ()
    """The app's committed effects after those, oldest first."""
    last_saved: AppEffect | None = None
    """The last effect :attr:`state` folds in (what the app last did, when no effect follows)."""

    @property
    def count(self) -> int:
        """How many effects the app has committed in all."""
        return self.saved + len(self.effects)

    @property
    def latest(self) -> AppEffect | None:
        """The app's last committed effect, if any."""
        return self.effects[-1] if self.effects else self.last_saved


def _source(effect: Message) -> str:
    return "" if isinstance(effect, UndecodedEffect) else type_source(type(effect))


def app_effect_of(effect: Message) -> AppEffect | None:
    """``effect`` as an :class:`AppEffect`: itself when it is one; for a record written before
    effects were wrapped, the bare effect with the app it named (``None`` if it names none).

    Before, an effect named its app in a field of its own, ``app``; the built-in notebook's
    were all ``"notebook"``.
    """
    if isinstance(effect, AppEffect):
        return effect
    if isinstance(effect, UndecodedEffect):
        app = effect.fields().get("app")
    elif isinstance(effect, NotebookEdited):
        app = "notebook"
    else:
        app = getattr(effect, "app", None)
    return AppEffect(app, effect) if isinstance(app, str) else None
