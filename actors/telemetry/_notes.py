"""What tracing says when it cannot do what it was asked: one line on stderr each time.

A line on stderr rather than a log record: the CLI logs only errors by default, and a run
asked for traces that silently made none would leave its user looking for spans that never
came. The run itself goes on (see :func:`~._switch.open_tracing`).
"""

from __future__ import annotations

import sys

EXTRA_HINT = "pip install 'livecontext[otel]'"
"""How to install what tracing needs."""


def warn(text: str) -> None:
    """Say ``text`` on stderr, as one ``livecontext: warning:`` line."""
    print(f"livecontext: warning: {text}", file=sys.stderr, flush=True)
