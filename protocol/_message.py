"""The base class of every message that travels between actors."""

from __future__ import annotations


class Message:
    """Base class of every message type.

    Subclasses are frozen attrs classes (``@frozen``) holding only data: ids, text, numbers,
    enums, tuples and other protocol types; never a dict, ``Any`` or a live object. One class
    per intent. The converter tags each with its class name (``"type": "StateTransition"``).
    """

    __slots__ = ()


def type_source(cls: type) -> str:
    """Where a class is defined, as ``module:qualname`` (what to import to have it)."""
    return f"{cls.__module__}:{cls.__qualname__}"
