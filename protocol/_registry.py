"""The message types this process defined beyond the protocol's own: apps' effects.

An app's effects are written to the event log by their tag (the class name) and must be
read back by every converter in the process: the history store's, the CLI's, a test's. So
defining an app registers its effect types here (``App.effects``), once, and every
:class:`~livecontext.protocol.wire.ProtocolConverter` looks a tag it does not know up here when it
meets it. This is the one process-wide table of the protocol, and it only grows: a tag names
one class for the life of the process, because the tag is what the log stores.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from ._catalog import TAGGED_TYPES
from ._errors import ProtocolError
from ._message import Message, type_source

_BUILTIN: dict[str, type] = {cls.__name__: cls for cls in TAGGED_TYPES}
_REGISTERED: dict[str, type] = {}


class MessageTypeClashError(ProtocolError, ValueError):
    """Two different classes claim one tag (a class name): the log could not tell them apart.

    Contrast with :class:`UnknownMessageTypeError`, a tag that names no class at all.
    """

    def __init__(self, tag: str, known: type, new: type) -> None:
        self.tag = tag
        self.known = known
        """The class that had the tag first."""
        self.new = new
        """The class refused."""
        super().__init__(
            f"two message classes share the tag {tag!r}: {type_source(known)} and "
            f"{type_source(new)}; the log stores a message by its class name alone, so rename "
            "one of them"
        )


def register_message_types(classes: Iterable[type]) -> None:
    """Make ``classes`` known to every converter of this process, tagged by class name.

    Registering a class again is harmless, and so is registering a new class of the same
    ``module:qualname`` (a module reloaded, a notebook cell run again): the newer one is used.

    Raises:
        TypeError: a class is not a :class:`Message` made with attrs.
        MessageTypeClashError: another class already has the tag.
    """
    for cls in classes:
        if not (isinstance(cls, type) and issubclass(cls, Message) and attrs.has(cls)):
            raise TypeError(
                f"{cls!r} cannot be written to the log: make it a @frozen attrs class "
                "subclassing livecontext.protocol.kernel.Message"
            )
        tag = cls.__name__
        builtin = _BUILTIN.get(tag)
        if builtin is not None:
            if builtin is not cls:
                raise MessageTypeClashError(tag, builtin, cls)
            continue
        known = _REGISTERED.get(tag)
        if known is not None and known is not cls and type_source(known) != type_source(cls):
            raise MessageTypeClashError(tag, known, cls)
        _REGISTERED[tag] = cls


def registered_type(tag: str) -> type | None:
    """The class registered under ``tag`` by :func:`register_message_types`, if any."""
    return _REGISTERED.get(tag)

