"""ISO 8601 text of UTC times, fast: every entry and record the runtime writes carries one."""

from __future__ import annotations

import datetime as dt

_DATETIME = dt.datetime
_UTC = dt.timezone.utc


def utc_iso_text(value: dt.datetime, always_fraction: bool) -> str | None:
    """``value.isoformat()`` for a UTC datetime (class ``datetime``, ``tzinfo`` exactly
    ``timezone.utc``: every time the runtime stamps), or ``None`` for any other value.

    ``always_fraction``: six digits of microseconds even when they are zero (as
    ``isoformat(timespec="microseconds")``), else only when they are not (as ``isoformat()``).

    Made from a table of digits and the day's text kept once: half the cost of
    ``isoformat()``, on the path of every record written.
    """
    if value.__class__ is not _DATETIME or value.tzinfo is not _UTC:
        return None
    day = _DAYS.get(value.toordinal())
    if day is None:
        day = _day_text(value)
    two, micro = _TWO_DIGITS, value.microsecond
    clock = f"{two[value.hour]}:{two[value.minute]}:{two[value.second]}"
    if micro or always_fraction:
        return f"{day}{clock}.{str(micro + 1_000_000)[1:]}+00:00"
    return f"{day}{clock}+00:00"


_TWO_DIGITS = tuple(f"{n:02d}" for n in range(100))
_DAYS: dict[int, str] = {}
"""``YYYY-MM-DDT`` of the days formatted lately, by their ordinal."""
_MAX_DAYS = 1024


def _day_text(value: dt.datetime) -> str:
    if len(_DAYS) >= _MAX_DAYS:  # (a long-lived process sees a new day now and then)
        _DAYS.clear()
    text = _DAYS[value.toordinal()] = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T"
    return text
