"""How protocol data is written and read: the one converter (:func:`make_converter`) and its
schema versions, JSON text, UTC times as text, the catalog of tagged classes and the
registry of apps' effect types, and the errors raised on the way.
"""

from __future__ import annotations

from ._converter import (
    SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    ProtocolConverter,
    check_schema_version,
    make_converter,
)
from ._json import dump_json, dump_standard_json, load_json
from ._utc import utc_iso_text
from ._catalog import CHANNELS, TAGGED_TYPES, members
from ._registry import MessageTypeClashError, register_message_types, registered_type
from ._errors import (
    LivecontextError,
    MalformedDataError,
    ProtocolError,
    UnknownMessageTypeError,
    UnsupportedSchemaVersionError,
)

__all__ = [
    "CHANNELS",
    "LivecontextError",
    "MalformedDataError",
    "MessageTypeClashError",
    "ProtocolConverter",
    "ProtocolError",
    "SCHEMA_VERSION",
    "SUPPORTED_SCHEMA_VERSIONS",
    "TAGGED_TYPES",
    "UnknownMessageTypeError",
    "UnsupportedSchemaVersionError",
    "check_schema_version",
    "dump_json",
    "dump_standard_json",
    "load_json",
    "make_converter",
    "members",
    "register_message_types",
    "registered_type",
    "utc_iso_text",
]
