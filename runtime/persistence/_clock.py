"""A system's sequence: one counter stamped on every record of every thread of a system.

Each thread numbers its own records (``seq``); a system of agents has several threads, and
needs to say what happened before what across them: to cut the whole system at one point
(``livecontext fork --system``) and to find where each of its threads stood then. So every
log of a system's threads is opened with the system's :class:`SystemClock`, and each append
stamps its records with the clock's next numbers (:attr:`StoredRecord.system_seq`), as part
of the records (hashed with them, written in the same transaction).

The numbers are taken in the Trio thread when the append starts, under the log's own order
(one append at a time per log), before any hop to a worker thread. Hence:

- within a thread, system seqs increase with seqs;
- a record appended because of another one, once that one's append returned (a
  notification posted by a tool whose call was recorded first; the answer to a question),
  has a larger system seq than it: the order respects causality.

They need not be contiguous: an append that fails, or is lost with the process (a torn last
record), leaves a gap. The clock is not stored: a system opening its threads again starts it
past the largest system seq any of them holds (:meth:`SystemClock.advance_past`), so it
continues where the system stopped.
"""

from __future__ import annotations


class SystemClock:
    """The next system seq of one running system (see the module docstring).

    Shared by the logs of the system's threads (``EventStore.open_thread(..., clock=)``) in
    one Trio run; not thread-safe, and need not be: only the Trio thread takes numbers.
    """

    def __init__(self, last: int = 0) -> None:
        """
        Args:
            last: The largest system seq already given (the next one is ``last + 1``).
        """
        if isinstance(last, bool) or not isinstance(last, int) or last < 0:
            raise ValueError(f"last must be an int >= 0, got {last!r}")
        self._last = last

    @property
    def last(self) -> int:
        """The largest system seq given so far (0 before any)."""
        return self._last

    def take(self, count: int) -> int:
        """Give ``count`` consecutive system seqs; returns the first."""
        first = self._last + 1
        self._last += count
        return first

    def advance_past(self, seq: int) -> None:
        """Make sure every system seq given from now on is larger than ``seq``."""
        if seq > self._last:
            self._last = seq

    def __repr__(self) -> str:
        return f"SystemClock(last={self._last})"
