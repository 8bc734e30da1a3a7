"""Errors raised while turning protocol data into Python objects and back."""

from __future__ import annotations


class LivecontextError(Exception):
    """Base class of every error livecontext raises on purpose.

    It is defined here, in the lowest layer, so that the protocol's errors can derive from it
    too; :mod:`livecontext.runtime` re-exports it with the errors split by who is at fault.
    """


class ProtocolError(LivecontextError):
    """Base class of every error raised by :mod:`livecontext.protocol`: stored or sent data
    that cannot be read (contrast with the runtime's :class:`UsageError`, a wrong call)."""


class UnknownMessageTypeError(ProtocolError):
    """Serialized data names a message type (its ``"type"`` tag) that this converter does not know.

    Contrast with :class:`UnsupportedSchemaVersionError`, where the tag may be fine but the
    data was written by a newer (or unknown) version of the wire format.
    """

    def __init__(self, tag: object, known: tuple[str, ...]) -> None:
        self.tag = tag
        self.known = known
        super().__init__(
            f"unknown message type tag {tag!r}: this converter knows {len(known)} types "
            f"(e.g. {', '.join(known[:5])}); import the module that defines the class (an app's "
            "effects are known once its App class is defined), or pass it to "
            "make_converter(extra_types=...)"
        )


class UnsupportedSchemaVersionError(ProtocolError):
    """Serialized data carries a schema version this build cannot read."""

    def __init__(self, version: object, supported: tuple[int, ...]) -> None:
        self.version = version
        self.supported = supported
        super().__init__(
            f"unsupported schema version {version!r}: this build reads versions "
            f"{', '.join(map(str, supported))}; upgrade livecontext to read newer data"
        )


class MalformedDataError(ProtocolError):
    """Serialized data is not valid JSON or does not have the shape of the expected type."""

    def __init__(self, what: str, detail: str) -> None:
        self.what = what
        self.detail = detail
        super().__init__(f"malformed {what}: {detail}")
