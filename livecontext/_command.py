"""The ``livecontext`` command's entry point: a Ctrl-C while the command starts (while it
imports what it needs) ends it as a Ctrl-C later does, in one line, exit 130.

This module and ``livecontext/__init__.py`` import nothing the interpreter has not loaded
already (``tests/actors/cli/test_cli_startup.py`` checks it): from the first line of
:func:`main` on, a Ctrl-C is met here, or by the command line (``actors/cli/_main.py``)
once the command's own modules are being imported."""

from __future__ import annotations

import sys


def main() -> None:
    """Import the command line, then run it."""
    try:
        from livecontext.actors.cli import main as command
    except KeyboardInterrupt:
        _interrupted()
    try:
        command(prog_name="livecontext")
    except KeyboardInterrupt:  # (before the command took Ctrl-C over, or after it gave it back)
        _interrupted()
    except BrokenPipeError:  # (what reads the output stopped reading: `livecontext history | head`)
        from livecontext.actors.cli import reader_gone
        reader_gone()


def _interrupted() -> None:
    sys.stderr.write("livecontext: interrupted\n")
    sys.exit(130)
