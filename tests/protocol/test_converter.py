from __future__ import annotations

import datetime as dt
import enum
import functools
import importlib
import json
import pkgutil
import types
import typing
from typing import Any

import attrs
import pytest
from attrs import frozen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import livecontext.protocol
from livecontext.protocol.history import Content, HistoryEntry, LevelText, ModelInputEntry, Retention
from livecontext.protocol.kernel import Ack, ActorId, Envelope, Message, Topic
from livecontext.protocol.records import NotebookEdited, TextChange, UndecodedEffect
from livecontext.protocol.wire import (
    SCHEMA_VERSION,
    TAGGED_TYPES,
    MalformedDataError,
    ProtocolConverter,
    UnknownMessageTypeError,
    UnsupportedSchemaVersionError,
    dump_json,
    make_converter,
)

# -- strategies for every protocol type, built from the classes' own field types -----------------

_ACTOR_IDS = st.builds(
    ActorId,
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_.:@+-", min_size=1, max_size=12),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:@+-",
            min_size=1, max_size=12),
)
_TOPICS = st.builds(Topic, st.text(max_size=12))
_UTC_TIMES = st.datetimes(timezones=st.just(dt.timezone.utc))
_MESSAGE_TYPES = tuple(c for c in TAGGED_TYPES if issubclass(c, Message) and c is not UndecodedEffect)
"""(An :class:`UndecodedEffect` is read only where an app's effect is expected: see its tests.)"""


def _holds_messages(cls: type, seen: frozenset[type] = frozenset()) -> bool:
    """Whether a field of ``cls`` (at any depth of tuples, unions and the attrs classes of
    fields) is declared as ``Message``."""
    def mentions(tp: Any) -> bool:
        if tp is Message:
            return True
        if isinstance(tp, type) and attrs.has(tp) and tp not in seen:
            return _holds_messages(tp, seen | {cls})
        return any(mentions(a) for a in typing.get_args(tp))
    return any(mentions(f.type) for f in attrs.fields(attrs.resolve_types(cls)))


_FLAT_MESSAGE_TYPES = tuple(c for c in _MESSAGE_TYPES if not _holds_messages(c))


@functools.cache
def strategy_for(tp: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of the declared type ``tp`` (nested messages go one level deep)."""
    if tp is str:
        return st.text(max_size=16)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(min_value=-(2**63), max_value=2**63)
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if tp is type(None):
        return st.none()
    if tp is ActorId:
        return _ACTOR_IDS
    if tp is Topic:
        return _TOPICS
    if tp is dt.datetime:
        return _UTC_TIMES
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    if tp is UndecodedEffect:  # an effect of a class this process does not know, as stored
        return st.builds(lambda tag, n: UndecodedEffect(tag, dump_json({"type": tag, "n": n})),
                         st.sampled_from(["Teleported", "Counted"]), st.integers(0, 99))
    if tp is TextChange:  # (only a change of one text into another is one)
        return st.builds(TextChange.between, st.text(max_size=16), st.text(max_size=16))
    if tp is Message:
        choices = _MESSAGE_TYPES if depth < 1 else _FLAT_MESSAGE_TYPES
        return st.one_of([strategy_for(c, depth + 1) for c in choices])
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([strategy_for(a, depth) for a in args])
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(strategy_for(args[0], depth), max_size=2).map(tuple)
        return st.tuples(*(strategy_for(a, depth) for a in args))
    if attrs.has(tp):
        fields = attrs.fields(attrs.resolve_types(tp))
        return st.builds(tp, **{f.name.lstrip("_"): strategy_for(f.type, depth) for f in fields if f.init})
    raise TypeError(f"no strategy for {tp!r}: extend strategy_for() in this test for the new field type")


def _envelopes(payloads: st.SearchStrategy[Message]) -> st.SearchStrategy[Envelope]:
    return st.builds(
        Envelope,
        message_id=st.text(max_size=30),
        sender=_ACTOR_IDS,
        recipient=st.one_of(_ACTOR_IDS, _TOPICS),
        sent_at=_UTC_TIMES,
        sent_mono_ns=st.integers(min_value=0, max_value=2**63),
        payload=payloads,
        correlation_id=st.none() | st.text(max_size=30),
        causation_id=st.none() | st.text(max_size=30),
    )


def _valid_envelope_data() -> dict[str, Any]:
    env = Envelope("0001-00000001", ActorId("client", "t"), ActorId("worker", "w"),
                   dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone.utc), 7, NotebookEdited("hi"))
    return make_converter().envelope_to_data(env)


# -- round trips -----------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [c for c in TAGGED_TYPES if c is not UndecodedEffect], ids=lambda c: c.__name__)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_tagged_type_round_trips_through_json_with_its_tag(cls: type, data: st.DataObject) -> None:
    converter = make_converter()
    obj = data.draw(strategy_for(cls))
    wire = json.loads(json.dumps(converter.unstructure(obj)))
    assert wire["type"] == cls.__name__
    declared: Any = Message if issubclass(cls, Message) else HistoryEntry
    assert converter.structure(wire, declared) == obj
    assert converter.structure(wire, cls) == obj


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_envelopes(strategy_for(Message)))
def test_an_envelope_round_trips_through_data_and_json(env: Envelope) -> None:
    converter = make_converter()
    assert converter.envelope_from_data(converter.envelope_to_data(env)) == env
    back = converter.envelope_from_json(converter.envelope_to_json(env))
    assert back == env
    assert back.sent_at.utcoffset() == dt.timedelta(0)
    assert type(back.recipient) is type(env.recipient)


def test_an_envelope_is_written_with_the_schema_version_and_readable_addresses() -> None:
    data = _valid_envelope_data()
    assert data["schema"] == SCHEMA_VERSION == 3
    assert data["sender"] == "client/t"
    assert data["recipient"] == "worker/w"
    assert data["sent_at"] == "2024-05-01T12:00:00+00:00"
    assert data["payload"] == {"type": "NotebookEdited", "text": "hi"}
    env = make_converter().envelope_from_data({**data, "recipient": "#history.changes"})
    assert env.recipient == Topic("history.changes")


def test_every_message_subclass_defined_in_livecontext_protocol_is_tagged() -> None:
    for info in pkgutil.iter_modules(livecontext.protocol.__path__):
        importlib.import_module(f"livecontext.protocol.{info.name}")
    found: set[type] = set()
    todo = [Message]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("livecontext.protocol."):
                found.add(sub)
    assert len(found) >= 5  # the kernel's own messages at least
    missing = sorted(c.__name__ for c in found - set(TAGGED_TYPES))
    assert missing == [], f"add these Message classes to TAGGED_TYPES in protocol/_catalog.py: {missing}"


def test_every_tagged_type_has_a_unique_tag() -> None:
    names = [c.__name__ for c in TAGGED_TYPES]
    assert len(names) == len(set(names))
    assert make_converter().tags == tuple(sorted(names))


# -- errors ---------------------------------------------------------------------------------------------


def test_an_unknown_tag_raises_unknown_message_type_error_naming_it() -> None:
    with pytest.raises(UnknownMessageTypeError, match=r"unknown message type tag 'Teleport': .*"
                                                      r"import the module that defines the class \(an app's "
                                                      r"effects are known once its App class is defined\), or pass it "
                                                      r"to make_converter\(extra_types=...\)") as info:
        make_converter().load_message({"type": "Teleport", "to": "mars"})
    assert info.value.tag == "Teleport"
    assert "NotebookEdited" in info.value.known


def test_an_unknown_tag_inside_an_envelope_raises_the_same_specific_error() -> None:
    data = {**_valid_envelope_data(), "payload": {"type": "Teleport"}}
    with pytest.raises(UnknownMessageTypeError, match="'Teleport'"):
        make_converter().envelope_from_data(data)


def test_tagged_data_without_a_tag_is_an_unknown_type() -> None:
    with pytest.raises(UnknownMessageTypeError, match="unknown message type tag None"):
        make_converter().load_message({"app": "nb", "text": "x"})


@pytest.mark.parametrize("version", [4, 0, 99, "1", 2.0, True, None])
def test_an_unknown_schema_version_raises_unsupported_schema_version_error_naming_it(version: object) -> None:
    data = {**_valid_envelope_data(), "schema": version}
    with pytest.raises(UnsupportedSchemaVersionError,
                       match=rf"unsupported schema version {version!r}: this build reads versions 1, 2, 3") as info:
        make_converter().envelope_from_data(data)
    assert info.value.version == version


def test_an_envelope_without_a_schema_version_is_refused() -> None:
    data = _valid_envelope_data()
    del data["schema"]
    with pytest.raises(UnsupportedSchemaVersionError, match="unsupported schema version None"):
        make_converter().envelope_from_data(data)


@pytest.mark.parametrize("text", ["{not json", "", "[1, 2", b"\xff\xfe"])
def test_malformed_json_raises_malformed_data_error(text: str | bytes) -> None:
    with pytest.raises(MalformedDataError, match=r"malformed envelope: not valid JSON"):
        make_converter().envelope_from_json(text)


def test_json_that_is_not_an_object_is_a_malformed_envelope() -> None:
    with pytest.raises(MalformedDataError, match=r"malformed envelope: expected a JSON object, got list"):
        make_converter().envelope_from_json("[1, 2]")


@pytest.mark.parametrize(
    "field,value,detail",
    [
        ("sent_mono_ns", "12", r"expected an integer, got '12' @ \$\.sent_mono_ns"),
        ("sent_mono_ns", True, r"expected an integer, got True @ \$\.sent_mono_ns"),
        ("message_id", 5, r"expected a string, got 5 @ \$\.message_id"),
        ("sender", 5, r"expected a 'kind/name' string, got 5 @ \$\.sender"),
        ("sender", "no-slash", r"invalid ActorId 'no-slash'"),
        ("recipient", "a b/c", r"invalid ActorId kind 'a b'"),
        ("sent_at", "2024-05-01T12:00:00", r"has no UTC offset @ \$\.sent_at"),
        ("sent_at", "yesterday", r"\$\.sent_at"),
        ("payload", "NotebookEdited", r"expected a JSON object, got str"),
        ("payload", {"type": "NotebookEdited", "app": "nb", "text": 5}, r"expected a string, got 5"),
        ("payload", {"type": "NotebookEdited", "app": "nb"}, r"required field missing @ \$\.text"),
    ],
)
def test_fields_of_the_wrong_type_raise_malformed_data_error(field: str, value: object, detail: str) -> None:
    data = {**_valid_envelope_data(), field: value}
    with pytest.raises(MalformedDataError, match=detail):
        make_converter().envelope_from_json(json.dumps(data))


def test_a_missing_envelope_field_raises_malformed_data_error() -> None:
    data = _valid_envelope_data()
    del data["sender"]
    with pytest.raises(MalformedDataError, match=r"malformed Envelope: required field missing @ \$\.sender"):
        make_converter().envelope_from_data(data)


def test_a_history_entry_is_not_accepted_where_a_message_is_declared() -> None:
    converter = make_converter()
    entry = converter.unstructure(
        converter.structure(
            {"type": "ModelInputEntry", "id": "e1", "revision": 1, "author": "engine/main",
             "created_at": "2024-05-01T12:00:00+00:00", "retention": "critical",
             "content": {k: {"text": "t", "tokens": 1} for k in ("live", "recent", "gist")},
             "text": "hello"},
            HistoryEntry,
        )
    )
    with pytest.raises(MalformedDataError, match="the tag 'ModelInputEntry' names a class that is not a Message"):
        converter.load_message(entry)
    assert isinstance(converter.structure(entry, HistoryEntry), ModelInputEntry)


# -- user messages ----------------------------------------------------------------------------------------


@frozen
class Greet(Message):
    """A user's own message, defined outside livecontext."""

    who: ActorId
    text: str
    times: int = 1
    reply_to: Topic | None = None


@frozen
class Other(Message):
    pass


@settings(max_examples=50, deadline=None)
@given(_envelopes(strategy_for(Greet)))
def test_a_users_extra_message_type_round_trips_in_an_envelope(env: Envelope) -> None:
    converter = make_converter(extra_types=[Greet])
    assert converter.envelope_from_json(converter.envelope_to_json(env)) == env
    assert "Greet" in converter.tags


def test_a_converter_without_the_extra_type_refuses_it_both_ways() -> None:
    with_greet = make_converter(extra_types=[Greet])
    plain = make_converter()
    data = with_greet.dump_message(Greet(ActorId("user", "me"), "hi"))
    with pytest.raises(UnknownMessageTypeError, match="'Greet'"):
        plain.load_message(data)
    with pytest.raises(UnknownMessageTypeError, match="'Greet'"):
        plain.dump_message(Greet(ActorId("user", "me"), "hi"))


def test_two_extra_types_with_one_tag_are_refused() -> None:
    clash = type("NotebookEdited", (), {})
    clash = attrs.frozen(clash)
    with pytest.raises(ValueError, match="two classes share the tag 'NotebookEdited'"):
        make_converter(extra_types=[clash])


def test_an_extra_type_that_is_not_an_attrs_class_is_refused() -> None:
    class Loose(Message):
        pass

    with pytest.raises(TypeError, match="is not an attrs class: make it a @frozen class"):
        make_converter(extra_types=[Loose])


def test_a_message_without_fields_round_trips() -> None:
    converter = make_converter(extra_types=[Other])
    assert converter.dump_message(Ack()) == {"type": "Ack"}
    assert converter.load_message({"type": "Other"}) == Other()


# -- the fast unstructuring hooks give what cattrs' generic ones give ------------------------------


def _same_data(fast: Any, generic: Any) -> None:
    """Equal, with the same Python types all the way down and dict keys in the same order
    (the order decides the bytes of the JSON written)."""
    assert type(fast) is type(generic), (fast, generic)
    if isinstance(fast, dict):
        assert list(fast) == list(generic)
        for key in fast:
            _same_data(fast[key], generic[key])
    elif isinstance(fast, list):
        assert len(fast) == len(generic)
        for a, b in zip(fast, generic):
            _same_data(a, b)
    else:
        assert fast == generic


@pytest.mark.parametrize("cls", TAGGED_TYPES, ids=lambda c: c.__name__)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_fast_unstructure_hooks_give_exactly_what_cattrs_generic_hooks_give(
    cls: type, data: st.DataObject
) -> None:
    fast = make_converter()
    generic = ProtocolConverter(_generic_unstructure=True)
    obj = data.draw(strategy_for(cls))
    _same_data(fast.unstructure(obj), generic.unstructure(obj))
    _same_data(fast.unstructure(obj, cls), generic.unstructure(obj, cls))  # untagged
    if issubclass(cls, Message):
        _same_data(fast.dump_message(obj), generic.dump_message(obj))
    assert json.dumps(fast.unstructure(obj)) == json.dumps(generic.unstructure(obj))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_envelopes(strategy_for(Message)))
def test_an_envelope_is_written_the_same_by_the_fast_and_the_generic_hooks(env: Envelope) -> None:
    fast = make_converter()
    generic = ProtocolConverter(_generic_unstructure=True)
    _same_data(fast.envelope_to_data(env), generic.envelope_to_data(env))
    assert fast.envelope_to_json(env) == generic.envelope_to_json(env)


@settings(max_examples=300, deadline=None)
@given(st.datetimes(timezones=st.sampled_from([dt.timezone.utc, dt.timezone(dt.timedelta(hours=5, minutes=30))]))
       | st.datetimes(timezones=st.just(dt.timezone.utc)).map(lambda t: t.replace(microsecond=0))
       | st.datetimes())
def test_a_datetime_is_written_as_its_isoformat_in_any_zone_with_or_without_a_fraction(
    value: dt.datetime,
) -> None:
    # a UTC time takes a shortcut (digits from tables, the day's text kept): the same text
    converter = make_converter()
    assert converter.unstructure(value) == value.isoformat()
    assert converter.unstructure(value) == value.isoformat()  # the day's text, kept, once more


class _Shade(enum.Enum):
    DARK = "dark"


class _Count(enum.IntEnum):
    ONE = 1


class _Word(str, enum.Enum):
    HI = "hi"


@frozen
class _Unusual(Message):
    """An extra type with what the protocol's own types do not use."""

    shade: _Shade
    count: _Count
    word: _Word
    pairs: tuple[tuple[str, int], ...]
    any_length: tuple[int, ...]
    nested: tuple[tuple[_Shade, ...], ...]
    when: dt.datetime | None
    maybe: Message | None
    type: str = "not the tag"
    hidden: int = attrs.field(init=False, default=3)


@frozen
class _Annotated(Message):
    """An extra type whose field carries ``Annotated`` metadata (left to cattrs' generator)."""

    tags: typing.Annotated[tuple[str, ...], "just a note"]
    shade: _Shade = _Shade.DARK


def test_extra_types_with_unusual_fields_are_written_the_same_by_both_hooks() -> None:
    obj = _Unusual(_Shade.DARK, _Count.ONE, _Word.HI, (("a", 1),), (1, 2), ((_Shade.DARK,), ()),
                   dt.datetime(2024, 5, 1, 12, 0, 0, 5, tzinfo=dt.timezone.utc), Ack())
    fast = make_converter(extra_types=[_Unusual, _Annotated])
    generic = ProtocolConverter([_Unusual, _Annotated], _generic_unstructure=True)
    data = fast.dump_message(obj)
    _same_data(data, generic.dump_message(obj))
    assert "hidden" not in data
    assert data["type"] == "_Unusual" and data["shade"] == "dark" and data["maybe"] == {"type": "Ack"}
    assert list(data) == ["shade", "count", "word", "pairs", "any_length", "nested", "when", "maybe", "type"]
    _same_data(fast.dump_message(_Annotated(("x",))), generic.dump_message(_Annotated(("x",))))
    assert fast.dump_message(_Annotated(("x",))) == {"tags": ["x"], "shade": "dark", "type": "_Annotated"}


def test_a_tagged_object_written_where_its_own_class_is_declared_carries_no_tag() -> None:
    entry = ModelInputEntry(id="e1", revision=1, author=ActorId("user", "me"),
                            created_at=dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc),
                            retention=Retention.CRITICAL,
                            content=Content(
                                *[LevelText("hi", 1)] * 3),
                            text="hi")
    converter = make_converter()
    assert "type" not in converter.unstructure(entry, ModelInputEntry)
    assert list(converter.unstructure(entry))[-1] == "type"
    assert converter.unstructure(entry)["created_at"] == "2024-05-01T00:00:00+00:00"
