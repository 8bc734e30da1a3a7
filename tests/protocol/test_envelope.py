from __future__ import annotations

import datetime as dt
import pickle

import attrs
from hypothesis import given
from hypothesis import strategies as st

from livecontext.protocol.agent import GetTail
from livecontext.protocol.kernel import ActorId, Envelope, Topic, format_message_id
from livecontext.protocol._converter import make_converter

_SENDER, _RECIPIENT = ActorId("engine", "a"), Topic("history.changes")
# from 1970 to 2200, in nanoseconds
_SENT_NS = st.integers(min_value=0, max_value=7_258_118_400 * 10**9)
_NODE = 0x2A


def _eager(sent_ns: int, counter: int = 7) -> Envelope:
    sent_at = dt.datetime.fromtimestamp(sent_ns / 1e9, dt.timezone.utc)
    return Envelope(format_message_id(sent_ns, counter, _NODE), _SENDER, _RECIPIENT, sent_at, 7, GetTail(),
                    "c0", "k0")


@given(_SENT_NS, _SENT_NS)
def test_envelopes_ids_sort_as_their_times(first_ns: int, second_ns: int) -> None:
    first, second = _eager(first_ns, 1), _eager(second_ns, 2)
    assert (first.message_id < second.message_id) == (first_ns <= second_ns)  # (the counter breaks ties)


def test_an_envelope_converts_pickles_and_evolves_as_plain_data() -> None:
    envelope = _eager(1_700_000_000_000_000_000)
    converter = make_converter()
    assert converter.envelope_from_json(converter.envelope_to_json(envelope)) == envelope
    assert pickle.loads(pickle.dumps(envelope)) == envelope
    assert attrs.evolve(envelope, causation_id=None).sent_at == envelope.sent_at
    assert [a.name for a in attrs.fields(Envelope)] == [
        "message_id", "sender", "recipient", "sent_at", "sent_mono_ns", "payload", "correlation_id", "causation_id"]
