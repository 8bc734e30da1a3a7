"""How hard the log pushes each commit to the disk."""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping

from ._errors import FsyncLevelError

FSYNC_ENV_VAR = "LIVECONTEXT_FSYNC"
"""The environment variable read when :func:`open_store` gets no ``fsync`` level."""


class FsyncLevel(enum.Enum):
    """When an append returns, what has it survived?

    - ``FULL`` (the default): a power loss. SQLite runs with ``synchronous=FULL`` in WAL
      mode; the JSONL backend calls ``os.fsync`` on the records file after each append (and
      on files and directories it creates).
    - ``NORMAL``: a crash of the process, not of the machine: the last commits may be lost on
      power loss, but never half-applied. SQLite ``synchronous=NORMAL``; JSONL writes without
      ``fsync`` (new files and directories are still synced).
    - ``OFF``: no syncing at all (SQLite ``synchronous=OFF``); for tests and throwaway runs.
      A power loss may lose recent commits, and with SQLite may damage the database.

    The memory backend ignores the level: it survives nothing.
    """

    FULL = "full"
    NORMAL = "normal"
    OFF = "off"

    @classmethod
    def parse(cls, text: str) -> FsyncLevel:
        """The level named ``text`` (``"full"``, ``"normal"`` or ``"off"``, any case).

        Raises:
            FsyncLevelError: ``text`` names no level.
        """
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise FsyncLevelError(text) from None


def resolve_fsync(level: FsyncLevel | None, environ: Mapping[str, str] | None = None) -> FsyncLevel:
    """``level`` if given, else ``$LIVECONTEXT_FSYNC`` if set and non-empty, else ``FULL``."""
    if level is not None:
        return level
    env = os.environ if environ is None else environ
    text = env.get(FSYNC_ENV_VAR, "")
    return FsyncLevel.parse(text) if text.strip() else FsyncLevel.FULL
