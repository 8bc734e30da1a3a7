from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from livecontext.protocol.wire import utc_iso_text

_UTC_TIMES = st.datetimes(timezones=st.just(dt.timezone.utc))


@settings(max_examples=300, deadline=None)
@given(_UTC_TIMES | _UTC_TIMES.map(lambda t: t.replace(microsecond=0)))
def test_a_utc_time_reads_as_its_isoformat_with_the_fraction_always_or_only_when_not_zero(
    value: dt.datetime,
) -> None:
    assert utc_iso_text(value, False) == value.isoformat()
    assert utc_iso_text(value, True) == value.isoformat(timespec="microseconds")


class _Stamp(dt.datetime):
    """A datetime subclass: it may format itself differently, so it is left alone too."""


@given(st.datetimes() | st.datetimes(timezones=st.just(dt.timezone(dt.timedelta(hours=-3))))
       | st.datetimes().map(lambda t: _Stamp(t.year, t.month, t.day, t.hour, t.minute, t.second,
                                             t.microsecond, tzinfo=dt.timezone.utc)))
def test_a_naive_time_another_zone_or_a_subclass_is_left_to_the_caller(value: dt.datetime) -> None:
    assert utc_iso_text(value, True) is None
    assert utc_iso_text(value, False) is None


def test_days_past_the_kept_texts_still_read_right() -> None:
    start = dt.datetime(1999, 12, 31, 23, 59, 59, tzinfo=dt.timezone.utc)
    for days in range(2100):  # more days than are kept: the kept texts start afresh
        value = start + dt.timedelta(days=days)
        assert utc_iso_text(value, False) == value.isoformat()
