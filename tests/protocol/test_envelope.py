from __future__ import annotations

import datetime as dt
import pickle

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from livecontext.protocol import ActorId, Envelope, GetTail, Topic, format_message_id, message_id_template
from livecontext.protocol._converter import make_converter

_SENDER, _RECIPIENT = ActorId("engine", "a"), Topic("history.changes")
# from 1970 to 2200, in nanoseconds
_SENT_NS = st.integers(min_value=0, max_value=7_258_118_400 * 10**9)
_NODE = 0x2A
_TEMPLATE = message_id_template(_NODE)


def _eager(sent_ns: int, counter: int = 7) -> Envelope:
    sent_at = dt.datetime.fromtimestamp(sent_ns / 1e9, dt.timezone.utc)
    return Envelope(format_message_id(sent_ns, counter, _NODE), _SENDER, _RECIPIENT, sent_at, 7, GetTail(),
                    "c0", "k0")


def _stamped(sent_ns: int, counter: int = 7) -> Envelope:
    return Envelope.stamped(_TEMPLATE, counter, _SENDER, _RECIPIENT, sent_ns, 7, GetTail(), "c0", "k0")


@given(_SENT_NS, st.integers(min_value=0, max_value=2**40))
def test_a_stamped_envelope_is_the_envelope_with_its_id_and_time_made(sent_ns: int, counter: int) -> None:
    stamped = _stamped(sent_ns, counter)
    eager = _eager(sent_ns, counter)
    assert stamped == eager and hash(stamped) == hash(eager) and repr(stamped) == repr(eager)
    assert stamped.sent_at == eager.sent_at and stamped.sent_at.tzinfo is dt.timezone.utc
    assert stamped.message_id == eager.message_id


@given(_SENT_NS, _SENT_NS)
def test_stamped_envelopes_ids_sort_as_their_times(first_ns: int, second_ns: int) -> None:
    first, second = _stamped(first_ns, 1), _stamped(second_ns, 2)
    assert (first.message_id < second.message_id) == (first_ns <= second_ns)  # (the counter breaks ties)


def test_a_stamped_envelopes_id_and_time_are_made_once_when_first_read() -> None:
    stamped = _stamped(1_700_000_000_123_456_000)
    with pytest.raises(AttributeError):  # the slots are empty until someone reads them
        Envelope.sent_at.__get__(stamped)  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        Envelope.message_id.__get__(stamped)  # type: ignore[attr-defined]
    first = stamped.sent_at
    assert first == dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=dt.timezone.utc)
    assert stamped.sent_at is first
    message_id = stamped.message_id
    assert message_id == format_message_id(1_700_000_000_123_456_000, 7, _NODE)
    assert stamped.message_id is message_id


def test_a_stamped_envelope_converts_pickles_and_evolves_as_the_same_envelope() -> None:
    stamped = _stamped(1_700_000_000_000_000_000)
    converter = make_converter()
    assert converter.envelope_to_data(stamped) == converter.envelope_to_data(_eager(1_700_000_000_000_000_000))
    assert converter.envelope_from_json(converter.envelope_to_json(stamped)) == stamped
    assert pickle.loads(pickle.dumps(stamped)) == stamped
    assert attrs.evolve(stamped, causation_id=None).sent_at == stamped.sent_at


def test_an_unknown_attribute_of_an_envelope_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'Envelope' object has no attribute 'sent_time'"):
        _stamped(0).sent_time  # type: ignore[attr-defined]  # noqa: B018
