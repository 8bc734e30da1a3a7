from __future__ import annotations

import datetime as dt
import pickle

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from livecontext.protocol import ActorId, Envelope, GetTail, Topic
from livecontext.protocol._converter import make_converter

_SENDER, _RECIPIENT = ActorId("engine", "a"), Topic("history.changes")
# from 1970 to 2200, in nanoseconds
_SENT_NS = st.integers(min_value=0, max_value=7_258_118_400 * 10**9)


def _eager(sent_ns: int) -> Envelope:
    sent_at = dt.datetime.fromtimestamp(sent_ns / 1e9, dt.timezone.utc)
    return Envelope("m1", _SENDER, _RECIPIENT, sent_at, 7, GetTail(), "c0", "k0")


@given(_SENT_NS)
def test_a_stamped_envelope_is_the_envelope_with_its_time_as_a_datetime(sent_ns: int) -> None:
    stamped = Envelope.stamped("m1", _SENDER, _RECIPIENT, sent_ns, 7, GetTail(), "c0", "k0")
    eager = _eager(sent_ns)
    assert stamped == eager and hash(stamped) == hash(eager) and repr(stamped) == repr(eager)
    assert stamped.sent_at == eager.sent_at and stamped.sent_at.tzinfo is dt.timezone.utc


def test_a_stamped_envelopes_time_is_made_once_when_first_read() -> None:
    stamped = Envelope.stamped("m1", _SENDER, _RECIPIENT, 1_700_000_000_123_456_000, 7, GetTail())
    with pytest.raises(AttributeError):  # the slot is empty until someone reads sent_at
        Envelope.sent_at.__get__(stamped)  # type: ignore[attr-defined]
    first = stamped.sent_at
    assert first == dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=dt.timezone.utc)
    assert stamped.sent_at is first


def test_a_stamped_envelope_converts_pickles_and_evolves_as_the_same_envelope() -> None:
    stamped = Envelope.stamped("m1", _SENDER, _RECIPIENT, 1_700_000_000_000_000_000, 7, GetTail(), "c0", "k0")
    converter = make_converter()
    assert converter.envelope_to_data(stamped) == converter.envelope_to_data(_eager(1_700_000_000_000_000_000))
    assert converter.envelope_from_json(converter.envelope_to_json(stamped)) == stamped
    assert pickle.loads(pickle.dumps(stamped)) == stamped
    assert attrs.evolve(stamped, causation_id=None).sent_at == stamped.sent_at


def test_an_unknown_attribute_of_an_envelope_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'Envelope' object has no attribute 'sent_time'"):
        Envelope.stamped("m1", _SENDER, _RECIPIENT, 0, 0, GetTail()).sent_time  # type: ignore[attr-defined]  # noqa: B018
