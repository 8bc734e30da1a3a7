"""Cyclic garbage-collector thresholds for a process full of long-lived actors.

A runtime holds many objects that live as long as it does (actors, histories, mailboxes) and
makes many short-lived ones per message. With the interpreter's default thresholds
(700, 10, 10) the young objects that are still in flight when a collection runs (a message
waiting for a model call, say) are promoted again and again, and every few seconds a full
collection walks every object of every actor: with a thousand agents, the collector can take
more CPU than the agents (docs/kernel.md has the figures). Raising the thresholds lets young
objects die of their reference counts first. The runtime's own objects form almost no
reference cycles, so collecting less often frees the same memory.

:func:`gc_tuned` is what :func:`open_runtime` uses (``tune_gc=True``, the default): nested
and concurrent runtimes share one tuning, and the previous thresholds come back when the
last one closes, unless someone changed them meanwhile (then theirs stay).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

GC_THRESHOLDS = (200_000, 20, 100)
"""The thresholds (generation 0, 1, 2) set while a runtime is open (why generation 0 is at
200,000: docs/kernel.md, "Garbage-collector thresholds")."""

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def gc_tuned(thresholds: tuple[int, int, int] = GC_THRESHOLDS) -> Iterator[None]:
    """Use ``thresholds`` for the cyclic garbage collector inside the ``with`` block.

    Raises:
        ValueError: a threshold is not a positive int.
    """
    if len(thresholds) != 3 or not all(isinstance(t, int) and not isinstance(t, bool) and t > 0
                                       for t in thresholds):
        raise ValueError(f"gc thresholds must be three positive ints, got {thresholds!r}")
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(*thresholds)
        _depth += 1
        mine = gc.get_threshold()
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                if _saved is not None and gc.get_threshold() == mine:
                    gc.set_threshold(*_saved)
                _saved = None
