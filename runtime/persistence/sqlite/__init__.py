"""The SQLite backend (``sqlite:PATH``): one database file holds every thread; and what the URL
opener needs to open, check and create such a file."""

from __future__ import annotations

from ._sqlite import (
    BUSY_TIMEOUT_S,
    NO_SPACE,
    SqliteBackend,
    connect,
    connect_to_read,
    damaged,
    disk_full,
    refused_to_write,
)
from ._tables import READABLE_FORMAT_VERSIONS, ensure_schema

__all__ = [
    "BUSY_TIMEOUT_S",
    "NO_SPACE",
    "READABLE_FORMAT_VERSIONS",
    "SqliteBackend",
    "connect",
    "connect_to_read",
    "damaged",
    "disk_full",
    "ensure_schema",
    "refused_to_write",
]
