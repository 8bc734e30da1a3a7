"""The in-memory backend (``memory:``): the threads live as long as the store is open."""

from __future__ import annotations

from ._memory import MemoryBackend

__all__ = ["MemoryBackend"]
