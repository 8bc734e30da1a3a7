"""The clock a runtime stamps with: :class:`WallClock` (the default) or :class:`VirtualClock`.

Every wait of the runtime (a model's latency, a tool's delay, an ask's timeout, an analyzer's
period, a retry's backoff, a restart's backoff) is a ``trio.sleep`` or a cancel scope's
deadline, so it follows the clock of the Trio run (``trio.run(..., clock=MockClock(...))``,
pytest-trio's ``autojump_clock``). What Trio's clock does not give is *the time of day*: the
``sent_at`` of envelopes, the time of history entries and of log records. A runtime reads it
from its :class:`RuntimeClock`: the machine's clock by default, or, with a
:class:`VirtualClock`, a fixed epoch plus Trio's time, so that a run under a ``MockClock``
stamps virtual times and replays byte for byte.

A runtime clock also hands out the run's sources of chance that are random by design (the
message ids' node, a system's run ids, the retry jitter): from the operating system for the
wall clock, from a seed for a virtual one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import secrets
import time

import trio

from ._errors import UsageError

DEFAULT_EPOCH = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)
"""The time of day a :class:`VirtualClock` gives at Trio time 0 unless told otherwise."""

_UNIX = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class RuntimeClock:
    """Where a runtime, and every actor in it, reads the time of day and its randomness.

    An actor reads its runtime's with ``self.ctx.runtime.clock``. Two kinds:
    :class:`WallClock` (the default: today's time) and :class:`VirtualClock` (an epoch plus
    Trio's time, seeded randomness). Waiting is never done here: sleeps and timeouts follow
    the Trio run's own clock.
    """

    __slots__ = ()

    virtual: bool = False
    """Whether the times are an epoch plus Trio's time (not the machine's clock)."""

    def time_ns(self) -> int:
        """Now, in nanoseconds since 1970-01-01 UTC."""
        raise NotImplementedError

    def monotonic_ns(self) -> int:
        """A monotonic time in nanoseconds (only differences mean anything)."""
        raise NotImplementedError

    def now(self) -> dt.datetime:
        """Now, as an aware UTC datetime (what records and entries are stamped with)."""
        return dt.datetime.fromtimestamp(self.time_ns() / 1e9, dt.timezone.utc)

    def random(self, purpose: str) -> random.Random:
        """A new source of randomness for ``purpose`` (e.g. ``"retry:planner"``): seeded from
        the operating system, or, for a virtual clock, from its seed and ``purpose`` (so one
        purpose's draws do not depend on how many another made)."""
        raise NotImplementedError

    def token_hex(self, nbytes: int) -> str:
        """A random token of ``nbytes`` bytes as hex, for ids (a system's run ids)."""
        raise NotImplementedError


class WallClock(RuntimeClock):
    """The machine's clock and the operating system's randomness: the default."""

    __slots__ = ()

    # the functions themselves (no Python frame between them and the caller: envelopes are
    # stamped at every tell)
    time_ns = staticmethod(time.time_ns)
    monotonic_ns = staticmethod(time.monotonic_ns)

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.timezone.utc)

    def random(self, purpose: str) -> random.Random:
        return random.Random()

    def token_hex(self, nbytes: int) -> str:
        return secrets.token_hex(nbytes)

    def __repr__(self) -> str:
        return "WallClock()"


WALL_CLOCK = WallClock()
"""The clock of a runtime opened without one."""


class VirtualClock(RuntimeClock):
    """Times that are ``epoch`` plus Trio's current time, and randomness drawn from ``seed``.

    Under ``trio.run(..., clock=trio.testing.MockClock(autojump_threshold=0))`` (or
    pytest-trio's ``autojump_clock``), Trio's time starts at 0 and moves only when every task
    waits, straight to the next deadline: a model's 2 s of latency takes no real time, and
    every stamp of the run is ``epoch`` plus the virtual seconds passed. Two runs of the same
    program from the same seed then write the same records, byte for byte (see
    docs/testing.md, "Virtual time", for what still varies).

    Under Trio's default clock, whose time starts at an arbitrary value, the stamps are
    ``epoch`` plus that value: ordered and consistent, but not a time of day anyone chose.

    Args:
        epoch: The time of day at Trio time 0 (an aware datetime; default 2000-01-01 UTC).
        seed: Seeds :meth:`random` and :meth:`token_hex`.

    Raises:
        UsageError: ``epoch`` has no time zone.
    """

    __slots__ = ("_epoch", "_epoch_ns", "_ids", "seed")

    virtual = True

    def __init__(self, epoch: dt.datetime = DEFAULT_EPOCH, *, seed: int = 0) -> None:
        if epoch.tzinfo is None or epoch.utcoffset() is None:
            raise UsageError(f"VirtualClock's epoch {epoch.isoformat()} has no time zone; give an aware "
                             "datetime, e.g. datetime(2000, 1, 1, tzinfo=timezone.utc)")
        self._epoch = epoch.astimezone(dt.timezone.utc)
        delta = self._epoch - _UNIX
        self._epoch_ns = (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
        self.seed = seed
        """What :meth:`random` and :meth:`token_hex` are seeded from."""
        self._ids = self.random("ids")

    @property
    def epoch(self) -> dt.datetime:
        """The time of day at Trio time 0, in UTC."""
        return self._epoch

    def time_ns(self) -> int:
        return self._epoch_ns + round(trio.current_time() * 1e9)

    def monotonic_ns(self) -> int:
        return round(trio.current_time() * 1e9)

    def random(self, purpose: str) -> random.Random:
        digest = hashlib.sha256(f"{self.seed}:{purpose}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def token_hex(self, nbytes: int) -> str:
        return self._ids.randbytes(nbytes).hex()

    def __repr__(self) -> str:
        return f"VirtualClock(epoch={self._epoch.isoformat()}, seed={self.seed})"
