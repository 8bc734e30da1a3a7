"""Times as the event log stores and checksums them: ISO 8601 UTC with microseconds."""

from __future__ import annotations

import datetime as dt

_UTC = dt.timezone.utc
_DATETIME = dt.datetime


def format_time(value: dt.datetime) -> str:
    """``value`` as ISO 8601 UTC with microseconds: the form stored and checksummed."""
    if value.__class__ is _DATETIME and value.tzinfo is _UTC:
        # what the general form below gives for a UTC datetime (every record's sent_at is
        # one), from tables of digits and the day's text made once: it is on the path of
        # every record written, where %-formatting seven numbers cost twice as much
        day = _DAYS.get(value.toordinal())
        if day is None:
            day = _day_text(value)
        two, three, micro = _TWO_DIGITS, _THREE_DIGITS, value.microsecond
        return (f"{day}{two[value.hour]}:{two[value.minute]}:{two[value.second]}."
                f"{three[micro // 1000]}{three[micro % 1000]}+00:00")
    return value.astimezone(dt.timezone.utc).isoformat(timespec="microseconds")


_TWO_DIGITS = tuple(f"{n:02d}" for n in range(100))
_THREE_DIGITS = tuple(f"{n:03d}" for n in range(1000))
_DAYS: dict[int, str] = {}
"""``YYYY-MM-DDT`` of the days formatted lately, by their ordinal."""
_MAX_DAYS = 1024


def _day_text(value: dt.datetime) -> str:
    if len(_DAYS) >= _MAX_DAYS:  # (a long-lived process sees a new day now and then)
        _DAYS.clear()
    text = _DAYS[value.toordinal()] = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T"
    return text


def parse_time(text: str) -> dt.datetime:
    """The inverse of :func:`format_time` (raises ``ValueError`` on malformed text)."""
    value = dt.datetime.fromisoformat(text)
    if value.tzinfo is None:
        raise ValueError(f"time {text!r} has no time zone")
    return value.astimezone(dt.timezone.utc)
