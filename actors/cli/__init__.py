"""The command-line interface (``livecontext``).

It lives in actors/ rather than runtime/ (DESIGN.md lists the CLI under runtime/) because it
wires actors together, and dependencies point one way: actors -> runtime -> protocol.
"""

from __future__ import annotations

from . import _commands_agent, _commands_batch, _commands_store, _commands_trace  # (each adds its commands to main)
from ._main import main, reader_gone

__all__ = ["main", "reader_gone"]
