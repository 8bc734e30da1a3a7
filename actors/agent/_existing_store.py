"""Opening a store that must already exist, to look into it (nothing is created).

Apart from the sessions that run agents (``_session``): looking into a store (the CLI's
``threads``, ``history``, ``trace``) needs no agent and no model.
"""

from __future__ import annotations

from pathlib import Path

from livecontext.runtime import UsageError
from livecontext.runtime.persistence import EventStore, open_store


class StoreMissingError(UsageError):
    """An inspection command named a store that does not exist (nothing is created)."""


async def open_existing_store(url: str) -> EventStore:
    """Open a store that must already exist, to read it: looking into a store never creates
    one, and a store that cannot be written can still be read."""
    scheme, _, rest = url.partition(":")
    scheme = scheme.strip().lower()
    if scheme in ("sqlite", "jsonl") and rest.strip():
        path = Path(rest[2:] if rest.startswith("//") else rest).expanduser()
        # an empty file is no store either (SQLite would make it one)
        if not path.exists() or (scheme == "sqlite" and path.is_file() and path.stat().st_size == 0):
            raise StoreMissingError(f"no store at {path} ({url}); run an agent with --store {url} first")
    return await open_store(url, read_only=True)
