"""The command-line interface (``livecontext``).

It lives in actors/ rather than runtime/ (DESIGN.md lists the CLI under runtime/) because it
wires actors together, and dependencies point one way: actors -> runtime -> protocol.

Each command's module is imported when that command runs (see ``_main._Commands``): starting
the command costs only what that command uses.
"""

from __future__ import annotations

from ._main import main, reader_gone

__all__ = ["main", "reader_gone"]
