"""The one error a blueprint raises: what is wrong, in which file, on which line."""

from __future__ import annotations

from livecontext.runtime import UsageError


class BlueprintError(UsageError):
    """A blueprint file is missing, is not TOML, or has an unknown key or a bad value.

    Unlike a :class:`~livecontext.runtime.UsageError` raised by a flag or a call, this one
    points into a file: its message starts with ``PATH:LINE:`` so editors and terminals can
    jump there, and its fields carry the same data for programs.

    Attributes:
        path: The blueprint's path, as it was given.
        line: The 1-based line the problem is on, or ``None`` (the file is missing or empty).
        key: The key at fault, dotted (``recap.strategy``, ``analyzers[1].kind``), or ``None``.
        problem: What is wrong and what to do, without the location.
    """

    def __init__(self, path: str, line: int | None, key: str | None, problem: str) -> None:
        self.path = path
        self.line = line
        self.key = key
        self.problem = problem
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {problem}")
