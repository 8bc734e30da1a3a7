"""Times as the event log stores and checksums them: ISO 8601 UTC with microseconds."""

from __future__ import annotations

import datetime as dt

from livecontext.protocol import utc_iso_text


def format_time(value: dt.datetime) -> str:
    """``value`` as ISO 8601 UTC with microseconds: the form stored and checksummed."""
    text = utc_iso_text(value, True)  # (every record's sent_at is UTC already)
    return text if text is not None else value.astimezone(dt.timezone.utc).isoformat(timespec="microseconds")


def parse_time(text: str) -> dt.datetime:
    """The inverse of :func:`format_time` (raises ``ValueError`` on malformed text)."""
    value = dt.datetime.fromisoformat(text)
    if value.tzinfo is None:
        raise ValueError(f"time {text!r} has no time zone")
    return value.astimezone(dt.timezone.utc)
