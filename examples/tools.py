"""Plain functions offered as tools: `livecontext run --tool examples.tools:add ...`."""

from __future__ import annotations

import livecontext


@livecontext.tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b
