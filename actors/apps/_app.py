"""The base class of apps: state shown in a window, changed only by committed effects."""

from __future__ import annotations

import abc
import inspect
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from attrs import frozen

from livecontext.protocol.history import ToolCall, ToolContext, ToolSpec
from livecontext.protocol.kernel import Message, type_source
from livecontext.protocol.wire import MessageTypeClashError, register_message_types

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from livecontext.runtime import Context

    from ._outcome import ToolOutcome

from ._errors import AppDefinitionError, AppStateError, UnknownEffectError

_APP_NAME = re.compile(r"^[A-Za-z0-9_.:@+-]+$")


class App(abc.ABC):
    """An app: a piece of state the model sees through a window and changes through tools.

    A subclass sets :attr:`name` and marks tool methods with :func:`tool`; that is all an app
    without state needs. An app with state also declares its effect classes in
    :attr:`effects`, folds them in :meth:`apply` and shows the state in :meth:`view`; it may
    save and load snapshots of it with :meth:`state_text` and :meth:`load_state`::

        @frozen
        class Added(Message):
            amount: int

        class Counter(App):
            name = "counter"
            effects = (Added,)

            def __init__(self) -> None:
                self.total = 0

            def view(self) -> str:
                return f"total: {self.total}"

            def apply(self, effect: Message) -> None:
                if isinstance(effect, Added):
                    self.total += effect.amount
                else:
                    super().apply(effect)

            @tool
            def add(self, amount: int) -> ToolOutcome:
                \"""Add to the total.

                Args:
                    amount: How much to add.
                \"""
                return ToolOutcome.ok(f"added {amount}", effect=Added(amount))

    **One writer.** A tool method must not change the app's state. It computes the result
    and returns a :class:`ToolOutcome` whose ``effect`` describes the change; the state
    changes only when the host calls :meth:`apply` with that effect, after the history store
    has committed it with the tool's result. An app's state is therefore the fold of *all*
    its committed effects: a failed commit never leaves the app ahead of the log, and a
    restart rebuilds the app from the log (from its latest saved state and the effects after
    it, or, for an app that saves none, by applying every effect it ever committed).

    **Effects.** Each class in :attr:`effects` is a ``@frozen`` attrs class subclassing
    :class:`~livecontext.protocol.kernel.Message`, holding only data. Defining the app registers
    them for the whole process, so every converter reads and writes them; the runtime
    records which app made each effect, so an effect needs no field naming its app. The log
    stores an effect by its class name: two effect classes of one name are refused.
    """

    name: ClassVar[str]
    """The app's name: its window's heading and its actor id's name (``app/<name>``)."""

    made_with: Mapping[str, Any] | None = None
    """The keyword arguments this app was made with, when made from an import path with an
    options table (``[[apps]]`` in a blueprint, ``--app``, ``open_agent(apps=["mod:Cls"])``)."""

    _made_from: tuple[tuple[Any, ...], dict[str, Any]] = ((), {})
    """The arguments the constructor was called with (kept by :meth:`__new__`): what
    :meth:`fresh` and :meth:`options` make the app again with."""

    def __new__(cls, *args: Any, **kwargs: Any) -> App:
        # Every app keeps the arguments it was made with, so that a restart and ``render``
        # make it again as it was without its author writing anything for it.
        self = super().__new__(cls)
        self._made_from = (args, dict(kwargs))
        return self

    effects: ClassVar[tuple[type[Message], ...]] = ()
    """The classes of the effects this app's tools return (and :meth:`apply` folds). A tool
    returning an effect of another class fails, and the effect is not committed."""

    snapshot_every: int = 20
    """How many effects the host applies between two saved states (:meth:`state_text`):
    rebuilding the app replays at most about that many effects after its latest one (a class
    attribute; an instance may set its own)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name is not None and (not isinstance(name, str) or not _APP_NAME.match(name)):
            raise AppDefinitionError(
                f"{cls.__qualname__}.name = {name!r} is not a valid app name: use letters, "
                "digits and _ . : @ + - (no '/', no spaces, not empty)"
            )
        _check_snapshots(cls)
        _register_effects(cls)
        every = cls.snapshot_every
        if type(every) is not int or every < 1:
            raise AppDefinitionError(
                f"{cls.__qualname__}.snapshot_every = {every!r}: give a number of effects >= 1")

    def fresh(self) -> App:
        """A new instance with this one's configuration and an empty state (for a restart).

        The host rebuilds the state from committed effects. The default calls the class
        again with the arguments this instance was made with (the same objects); an app
        whose constructor does something that must not happen twice (opens a connection
        it must share, say) overrides this.

        Raises:
            AppDefinitionError: the constructor fails when called again (the message names
                the class and says to override ``fresh``).
        """
        args, kwargs = self._made_from
        try:
            return type(self)(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any failure of the app's constructor is reported as such
            raise AppDefinitionError(
                f"app {self.name!r} ({type_source(type(self))}) cannot be made again with the "
                f"arguments it was made with: {type(exc).__name__}: {exc}; make its constructor "
                "accept them again, or override fresh() to return a new instance") from None

    def options(self) -> Mapping[str, Any] | None:
        """The keyword arguments that make this app again, as JSON-safe data, recorded with its
        thread so that ``render`` and a resumed run rebuild it; ``None``: it is made with no
        arguments, or with some that are not JSON data (a live object: the thread then shows
        the app's recorded window where it cannot make it).

        The default: :attr:`made_with` if set, else the constructor's arguments by parameter
        name when all of them are JSON data (strings, numbers, booleans, ``None``, lists and
        objects of those). Override it for arguments that are not, if you can say them as
        data that the constructor takes back."""
        if self.made_with is not None:
            return self.made_with
        return _json_arguments(type(self), *self._made_from)

    def data_tools(self) -> tuple[DataTool, ...] | None:
        """The app's tools given as data (a spec and what runs a call each) rather than as
        ``@tool`` methods, or ``None`` (the default): its class's ``@tool`` methods.

        For an app whose tools are known only once it runs (an MCP server's): they belong to
        the instance, so two apps of one class may offer different tools. A data tool gets
        the call as the model made it (its arguments as JSON text, not validated: the spec's
        schema is the tool's own business) and its :class:`ToolContext`.
        """
        return None

    def bind(self, ctx: Context) -> None:
        """Called by the app host with its context before any tool runs.

        Most apps need nothing; an app whose tools talk to other actors (such as the one
        that spawns sub-agents) keeps ``ctx`` to send through it.
        """

    def window(self) -> str:
        """The app's ``[Window]`` snapshot: a heading naming the app, then :meth:`view`."""
        return f"[Window: {self.name}]\n{self.view()}"

    def view(self) -> str:
        """What the model should see of the current state (the window's body; empty by
        default, for an app that keeps no state)."""
        return ""

    def apply(self, effect: Message) -> None:
        """Fold one committed effect into the state.

        Implementations handle their own effect types (those in :attr:`effects`) and pass
        anything else to ``super().apply(effect)``, which refuses it.

        Raises:
            UnknownEffectError: if ``effect`` is not one of this app's effects.
        """
        raise UnknownEffectError(self.name, effect)

    def state_text(self) -> str | None:
        """The state as text (JSON, carrying its own format version) for a snapshot, or
        ``None`` (the default): the app saves no snapshots.

        The host calls it every :attr:`snapshot_every` effects and the history store keeps
        the text with the thread's snapshots; a restart then loads it (:meth:`load_state`)
        and applies only the effects committed after it. An app that saves none is rebuilt
        by applying every effect it ever committed, and the thread's snapshots carry all of
        them: fine for a few hundred effects, not for an app whose tools run all day.
        Override it together with :meth:`load_state`.
        """
        return None

    def load_state(self, text: str) -> None:
        """Replace the state with one saved by :meth:`state_text`.

        A state that cannot be loaded loses nothing: the host logs why and rebuilds the app
        by applying every effect it committed instead.

        Raises:
            AppStateError: if ``text`` is not such a snapshot; the state is then unchanged.
        """
        raise AppStateError(
            f"app {self.name!r} ({type_source(type(self))}) loads no snapshots: "
            "override state_text and load_state together"
        )


@frozen
class DataTool:
    """A tool given as data by :meth:`App.data_tools`: what the model is sent, and what runs
    a call (it returns the outcome; an exception it raises is a FAILED result saying so)."""

    spec: ToolSpec
    run: Callable[[ToolCall, ToolContext], Awaitable[ToolOutcome]]


def _json_arguments(cls: type[App], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """``args`` and ``kwargs`` by parameter name of ``cls``'s constructor, if they are JSON
    data that reads back equal; else ``None``."""
    if not args and not kwargs:
        return None
    try:
        bound = inspect.signature(cls).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    named = dict(bound.arguments)
    for name, param in inspect.signature(cls).parameters.items():
        if param.kind is inspect.Parameter.VAR_POSITIONAL and name in named:
            return None  # (a *args tuple cannot be given back by name)
        if param.kind is inspect.Parameter.VAR_KEYWORD and name in named:
            named.update(named.pop(name))
    try:
        if json.loads(json.dumps(named)) != named:
            return None  # (tuples, say: they would come back as lists)
    except (TypeError, ValueError):
        return None
    return named


def _check_snapshots(cls: type[App]) -> None:
    saves = cls.state_text is not App.state_text
    loads = cls.load_state is not App.load_state
    if saves != loads:
        has, lacks = ("state_text", "load_state") if saves else ("load_state", "state_text")
        raise AppDefinitionError(
            f"{cls.__qualname__} overrides {has} but not {lacks}: an app that saves its state "
            "must load it too (or override neither: its effects are then replayed)"
        )


def _register_effects(cls: type[App]) -> None:
    """Check the classes ``cls`` declares in ``effects`` and register them for the process."""
    declared = cls.__dict__.get("effects")
    if declared is None:
        return
    if not isinstance(declared, tuple):
        raise AppDefinitionError(
            f"{cls.__qualname__}.effects must be a tuple of effect classes, got {declared!r}")
    try:
        register_message_types(declared)
    except (TypeError, MessageTypeClashError) as exc:
        raise AppDefinitionError(f"{cls.__qualname__}.effects: {exc}") from None
    if declared and cls.apply is App.apply:
        raise AppDefinitionError(
            f"{cls.__qualname__} declares effects ({', '.join(e.__name__ for e in declared)}) "
            "but no apply(): fold them into the state there")
