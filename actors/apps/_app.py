"""The base class of apps: state shown in a window, changed only by committed effects."""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from livecontext.protocol import Message

if TYPE_CHECKING:
    from livecontext.runtime import Context

from ._errors import AppDefinitionError, UnknownEffectError

_APP_NAME = re.compile(r"^[A-Za-z0-9_.:@+-]+$")


class App(abc.ABC):
    """An app: a piece of state the model sees through a window and changes through tools.

    Subclasses set :attr:`name`, mark tool methods with :func:`tool`, and implement
    :meth:`view`, :meth:`apply`, :meth:`state_text` and :meth:`load_state`.

    **One writer.** A tool method must not change the app's state. It computes the result
    and returns a :class:`ToolOutcome` whose ``effect`` describes the change; the state
    changes only when the host calls :meth:`apply` with that effect, after the history store
    has committed it with the tool's result. An app's state is therefore a fold of its
    committed effects: a failed commit never leaves the app ahead of the log, and replaying
    the log rebuilds the app.
    """

    name: ClassVar[str]
    """The app's name: its window's heading and its actor id's name (``app/<name>``)."""

    made_with: Mapping[str, Any] | None = None
    """The keyword arguments this app was made with, when made from an import path with an
    options table (``[[apps]]`` in a blueprint, ``--app``, ``open_agent(apps=["mod:Cls"])``)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name is not None and (not isinstance(name, str) or not _APP_NAME.match(name)):
            raise AppDefinitionError(
                f"{cls.__qualname__}.name = {name!r} is not a valid app name: use letters, "
                "digits and _ . : @ + - (no '/', no spaces, not empty)"
            )

    def fresh(self) -> App:
        """A new instance with this one's configuration and an empty state (for a restart).

        The host rebuilds the state from committed effects. Apps whose constructor takes
        arguments override this.
        """
        return type(self)()

    def options(self) -> Mapping[str, Any] | None:
        """The keyword arguments that make this app again, as JSON-safe data, recorded with its
        thread so that ``render`` and a resumed run rebuild it; ``None``: it is made with no
        arguments. The default: :attr:`made_with`. An app made in Python with arguments that
        should be resumed as it was overrides this."""
        return self.made_with

    def bind(self, ctx: Context) -> None:
        """Called by the app host with its context before any tool runs.

        Most apps need nothing; an app whose tools talk to other actors (such as the one
        that spawns sub-agents) keeps ``ctx`` to send through it.
        """

    def window(self) -> str:
        """The app's ``[Window]`` snapshot: a heading naming the app, then :meth:`view`."""
        return f"[Window: {self.name}]\n{self.view()}"

    @abc.abstractmethod
    def view(self) -> str:
        """What the model should see of the current state (the window's body)."""

    @abc.abstractmethod
    def apply(self, effect: Message) -> None:
        """Fold one committed effect into the state.

        Implementations handle their own effect types and pass anything else to
        ``super().apply(effect)``, which refuses it.

        Raises:
            UnknownEffectError: if ``effect`` is not one of this app's effects.
        """
        raise UnknownEffectError(self.name, effect)

    @abc.abstractmethod
    def state_text(self) -> str:
        """The state as JSON text, for snapshots (it carries its own format version)."""

    @abc.abstractmethod
    def load_state(self, text: str) -> None:
        """Replace the state with one saved by :meth:`state_text`.

        Raises:
            AppStateError: if ``text`` is not such a snapshot; the state is then unchanged.
        """
