"""One converter that turns every protocol type into JSON-safe data and back.

Wire decisions (schema version 3):

- Tagged classes (every :class:`Message` subclass, every history entry, every log record
  payload) carry a ``"type"`` key holding their class name wherever the declared type does
  not name the class: a field declared as ``Message``, as a union of tagged classes (such as
  :data:`HistoryEntry`), optionally ``| None``, or a tuple of those, is structured by that
  tag, and a ``Message`` field only accepts a ``Message``. A field declared as one concrete
  class is a plain object.
- An entry's or a result's :class:`Content` writes each text once: a level equal to LIVE is
  the string ``"live"``, a GIST equal to RECENT is ``"recent"``, and a level that begins and
  ends like LIVE is written as LIVE's head and tail around its own middle
  (``{"head": H, "text": T, "tail": L, "tokens": N}``); see :mod:`._content_wire`.
- :class:`ActorId` is the string ``"kind/name"``; :class:`Topic` is ``"#name"``.
- A :class:`TextChange` (an app's window recorded as a change of the one before it, in an
  :class:`AppWindowsChanged`) is the list ``[size, head, middle, tail]``.
- Datetimes are ISO 8601 strings with their UTC offset (a naive one is malformed); enums are
  their values; tuples are lists.
- Scalars are strict: a string field takes only a string, an integer field only an integer
  (not ``true``, not ``"12"``), a float field a number.
- A serialized envelope is an object with ``"schema": 3`` and the envelope's fields.
- Unknown tags raise :class:`UnknownMessageTypeError`, unknown schema versions
  :class:`UnsupportedSchemaVersionError`, anything else malformed :class:`MalformedDataError`.
  Except where an app's effect is expected (:attr:`AppEffect.effect`, and the bare effects
  of older records): there an unknown tag reads as an :class:`UndecodedEffect` holding the
  stored JSON, which is written back exactly as it was, so a process that does not know an
  app's effect classes can still open, show and copy its thread.
- The classes a converter knows are the protocol's own, its ``extra_types``, and every class
  registered in the process (:func:`register_message_types`: defining an ``App`` registers
  its ``effects``), looked up when first met, so a converter made before an app's module
  was imported reads that app's effects too.

What version 3 changed, and how version 2 still reads:

- An app's effect is recorded wrapped in an :class:`AppEffect` naming its app and the
  effect class's module (the effect itself carries no ``app`` field); version 2's bare
  effects with an ``app`` field still fold.
- A history snapshot keeps, per app, its latest saved state and the effects after it
  (``apps``); version 2's ``app_effects`` (each app's last effect) still read.
- The task lifecycle's records (:class:`TaskCompleted`, :class:`UserQuestionAsked`,
  :class:`StepFailed`, :class:`EnginePaused`), ``ThreadConfigured.model``,
  ``ThreadConfigured.settings`` and ``AppInfo.options`` are new; a record without them
  reads with their defaults (``settings`` ``None``: not recorded).

What version 2 changed, and how version 1 still reads:

- Version 1 wrote every level of a :class:`Content` as ``{"text", "tokens"}``; that form is
  still read (and still written for a level that repeats nothing).
- The history store appends a tool-results entry as a :class:`ToolResultsAppended` record
  whose entry holds no results (they are the ones recorded, each stored once, in its
  :class:`ToolResultRecorded`); version 1 wrote an :class:`EntryAppended` carrying them, and
  such records still fold.

There is no process-global converter: call :func:`make_converter` and keep the result.
"""

from __future__ import annotations

import datetime as dt
import enum
import functools
import json
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import cattrs
from cattrs.fns import identity
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.preconf.json import make_converter as _make_json_converter

from ._apps import AppEffect, UndecodedEffect
from ._catalog import TAGGED_TYPES
from ._content import Content, LevelText
from ._content_wire import structure_content, unstructure_content
from ._envelope import Envelope
from ._errors import MalformedDataError, UnknownMessageTypeError, UnsupportedSchemaVersionError
from ._ids import ActorId, Topic
from ._json import dump_json, load_json
from ._windows import TextChange, structure_text_change, unstructure_text_change
from ._message import Message
from ._records import HistorySnapshot, ToolResultRecorded
from ._registry import registered_type
from ._utc import utc_iso_text

SCHEMA_VERSION = 3
"""The version of the wire format written by this build."""
SUPPORTED_SCHEMA_VERSIONS = (1, 2, 3)
"""The versions this build can read."""

T = typing.TypeVar("T")


class ProtocolConverter:
    """Converts protocol objects to JSON-safe data and back. Make one with :func:`make_converter`."""

    def __init__(self, extra_types: Iterable[type] = (), *, _generic_unstructure: bool = False) -> None:
        # ``_generic_unstructure``: unstructure with cattrs' generic hooks only (what the fast
        # hooks below must match; the tests compare the two)
        self._c = _make_json_converter()
        self._by_tag: dict[str, type] = {}
        for cls in (*TAGGED_TYPES, *extra_types):
            if not attrs.has(cls):
                raise TypeError(f"{cls!r} is not an attrs class: make it a @frozen class to serialize it")
            tag = cls.__name__
            if tag in self._by_tag and self._by_tag[tag] is not cls:
                raise ValueError(f"two classes share the tag {tag!r}: {self._by_tag[tag]} and {cls}")
            self._by_tag[tag] = cls
        self._tagged = set(self._by_tag.values())
        """The tagged classes met so far: the protocol's, ``extra_types``, and those of the
        process's registry (:func:`register_message_types`) once used."""
        # Strict scalars: cattrs' defaults call str(v) / int(v), which would turn {"a": 1}
        # into the text "{'a': 1}" and "12" into 12. Wire data of the wrong type is malformed.
        self._c.register_structure_hook(str, _strict(str))
        self._c.register_structure_hook(int, _strict(int))
        self._c.register_structure_hook(bool, _strict(bool))
        self._c.register_structure_hook(float, _structure_float)
        self._c.register_unstructure_hook(ActorId, str)
        self._c.register_structure_hook(ActorId, lambda v, _: self._actor_id(v))
        self._c.register_unstructure_hook(Topic, lambda t: f"#{t.name}")
        self._c.register_structure_hook(Topic, lambda v, _: self._topic(v))
        self._c.register_unstructure_hook(dt.datetime, _unstructure_datetime)
        self._c.register_structure_hook(dt.datetime, lambda v, _: self._datetime(v))
        self._c.register_structure_hook(ActorId | Topic, lambda v, _: self._address(v))
        self._c.register_unstructure_hook(ActorId | Topic, self._unstructure_address)
        # an entry's levels: each text written once (see _content_wire)
        self._c.register_unstructure_hook(Content, unstructure_content)
        level_hook = self._c.get_structure_hook(LevelText)

        def level_text(value: Any) -> LevelText:
            return typing.cast(LevelText, level_hook(value, LevelText))
        self._c.register_structure_hook(
            Content, lambda v, _: structure_content(v, level_text, _character_count))
        # an app window's change: a short list (see _windows)
        self._c.register_unstructure_hook(TextChange, unstructure_text_change)
        self._c.register_structure_hook(TextChange, lambda v, _: structure_text_change(v))
        # Each tagged class, where its type is known, is a plain object (hooks made lazily, so
        # classes may refer to each other in any order). Where a field is declared as
        # ``Message`` or as a union of tagged classes, the ``"type"`` tag picks the class.
        self._c.register_structure_hook_factory(
            self._is_tagged_class, lambda t: make_dict_structure_fn(t, self._c))
        self._c.register_structure_hook_factory(self._is_tagged_position, self._tagged_structure_hook)
        # where an app's effect is expected, a tag this process does not know is kept as it was
        self._c.register_structure_hook_factory(
            lambda t: t in (AppEffect, ToolResultRecorded, HistorySnapshot), self._lenient_structure_fn)
        # Unstructuring is on the path of every record written. The fast hooks give exactly
        # what cattrs' generic ones give (a test compares them on every tagged type): each
        # tagged class gets a generated function that writes its ``"type"`` in the same dict
        # literal, found by a dict lookup on the object's class; ``tuple[X, ...]`` is a list
        # comprehension with X's hook resolved once; plain enums are their value.
        self._tagged_fns: dict[type, Callable[[Any], dict[str, Any]]] = {UndecodedEffect: _undecoded_data}
        self._generic = _generic_unstructure
        if _generic_unstructure:
            self._c.register_unstructure_hook_factory(
                self._is_tagged_class, lambda t: make_dict_unstructure_fn(t, self._c))
        else:
            self._c.register_unstructure_hook_factory(_is_plain_enum, lambda t: _enum_value)
            self._c.register_unstructure_hook_factory(_is_homogeneous_tuple, self._tuple_unstructure_hook)
            self._c.register_unstructure_hook_factory(
                self._is_tagged_class, lambda t: self._make_unstructure_fn(t, tagged=False))
        self._c.register_unstructure_hook_factory(self._is_tagged_position, self._tagged_unstructure_hook)

    # -- public API -------------------------------------------------------------------------

    @property
    def tags(self) -> tuple[str, ...]:
        """The tags of the converter's own classes (the protocol's and its ``extra_types``),
        sorted; it also knows the classes registered in the process (:func:`register_message_types`)."""
        return tuple(sorted(self._by_tag))

    def unstructure(self, obj: Any, cls: Any = None) -> Any:
        """Turn ``obj`` into JSON-safe data (tagged classes carry their ``"type"``)."""
        if cls is None and self._is_tagged_class(type(obj)):
            return self._unstructure_tagged(obj)
        return self._c.unstructure(obj, cls if cls is not None else type(obj))

    def structure(self, data: Any, cls: type[T]) -> T:
        """Turn JSON-safe data back into a ``cls``.

        Raises:
            UnknownMessageTypeError: a ``"type"`` tag names no known class.
            MalformedDataError: the data does not have the shape of ``cls``.
        """
        try:
            return self._c.structure(data, cls)
        except (UnknownMessageTypeError, UnsupportedSchemaVersionError, MalformedDataError):
            raise
        except Exception as exc:  # cattrs raises exception groups with the details
            specific = _find_specific(exc)
            if specific is not None:
                raise specific from exc
            raise MalformedDataError(getattr(cls, "__name__", str(cls)), _describe(exc)) from exc

    def dump_message(self, message: Message) -> dict[str, Any]:
        """A message as tagged JSON-safe data."""
        fn = self._tagged_fns.get(message.__class__)  # (_unstructure_tagged, in one call less)
        if fn is None:
            fn = self._tagged_fn(type(message))
        return fn(message)

    def load_message(self, data: Any) -> Message:
        """A message from tagged data, checking its tag."""
        return self.structure(data, Message)

    def envelope_to_data(self, envelope: Envelope) -> dict[str, Any]:
        """An envelope as JSON-safe data with the schema version."""
        data = self._c.unstructure(envelope, Envelope)
        data["schema"] = SCHEMA_VERSION
        return typing.cast(dict[str, Any], data)

    def envelope_from_data(self, data: Any) -> Envelope:
        """An envelope from data made by :meth:`envelope_to_data`.

        Raises:
            UnsupportedSchemaVersionError: the data's ``"schema"`` is not one this build reads.
            UnknownMessageTypeError: the payload's tag names no known message type.
            MalformedDataError: anything else is wrong with the data.
        """
        if not isinstance(data, dict):
            raise MalformedDataError("envelope", f"expected a JSON object, got {type(data).__name__}")
        check_schema_version(data.get("schema"))
        body = {k: v for k, v in data.items() if k != "schema"}
        return self.structure(body, Envelope)

    def envelope_to_json(self, envelope: Envelope) -> str:
        """An envelope as compact JSON text."""
        return json.dumps(self.envelope_to_data(envelope), separators=(",", ":"), ensure_ascii=False)

    def envelope_from_json(self, text: str | bytes) -> Envelope:
        """An envelope from JSON text; see :meth:`envelope_from_data` for the errors."""
        try:
            data = json.loads(text)
        except (ValueError, TypeError) as exc:
            raise MalformedDataError("envelope", f"not valid JSON ({exc})") from exc
        return self.envelope_from_data(data)

    # -- hooks --------------------------------------------------------------------------------

    def _is_tagged_class(self, t: Any) -> bool:
        """Whether ``t`` is a tagged class this converter knows (the first time a class of
        the process's registry is met, it is added)."""
        if t in self._tagged:
            return True
        if isinstance(t, type) and registered_type(t.__name__) is t:
            self._tagged.add(t)
            return True
        return False

    def _is_tagged_position(self, t: Any) -> bool:
        """Whether a field declared as ``t`` holds a tagged object (or ``None``)."""
        if t is Message:
            return True
        args = typing.get_args(t)
        if typing.get_origin(t) not in (typing.Union, types.UnionType) or not args:
            return False
        members = [a for a in args if a is not type(None)]
        return bool(members) and all(m is Message or self._is_tagged_class(m) for m in members)

    def _tagged_unstructure_hook(self, t: Any) -> Callable[[Any], Any]:
        fns, make = self._tagged_fns, self._tagged_fn

        def unstructure_tagged_or_none(obj: Any) -> Any:  # (_unstructure_tagged, inline)
            if obj is None:
                return None
            fn = fns.get(obj.__class__)
            if fn is None:
                fn = make(type(obj))
            return fn(obj)
        return unstructure_tagged_or_none

    def _tuple_unstructure_hook(self, t: Any) -> Callable[[Any], Any]:
        hook = self._c.get_unstructure_hook(typing.get_args(t)[0])
        if hook == identity:
            return list  # what cattrs returns for it

        def unstructure(items: Any) -> list[Any]:
            return [hook(item) for item in items]
        return unstructure

    def _make_unstructure_fn(self, cls: type, *, tagged: bool) -> Callable[[Any], dict[str, Any]]:
        """What cattrs' ``make_dict_unstructure_fn`` makes for ``cls`` (a key per ``init``
        field, in order, each through its declared type's hook), the tag last if ``tagged``,
        as one dict literal with the common hooks written inline."""
        fields = attrs.fields(attrs.resolve_types(cls))
        if any(_needs_generic(f.type) for f in fields):
            plain: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(cls, self._c)
            if not tagged:
                return plain
            tag = cls.__name__

            def with_tag(obj: Any) -> dict[str, Any]:
                data = plain(obj)
                data["type"] = tag
                return data
            return with_tag
        globs: dict[str, Any] = {}
        items: list[str] = []
        for f in fields:
            if not f.init:
                continue
            try:
                hook = self._c.get_unstructure_hook(f.type, cache_result=False)
            except RecursionError:
                hook = self._c.unstructure
            value = f"o.{f.name}"
            if hook == identity:
                expr = value
            elif hook is _enum_value:
                expr = f"{value}.value"
            else:
                globs[f"h_{f.name}"] = hook
                expr = f"h_{f.name}({value})"
            items.append(f"{f.name!r}: {expr}")
        if tagged:
            items.append(f"'type': {cls.__name__!r}")
        name = f"unstructure{'_tagged' if tagged else ''}_{cls.__name__}"
        source = f"def {name}(o):\n    return {{{', '.join(items)}}}\n"
        exec(compile(source, f"<livecontext unstructure {cls.__qualname__}>", "exec"), globs)
        return typing.cast(Callable[[Any], dict[str, Any]], globs[name])

    def _tagged_structure_hook(self, t: Any) -> Callable[[Any, Any], Any]:
        args = typing.get_args(t)
        optional = type(None) in args
        allowed = tuple(a for a in args if a is not type(None)) or (t,)

        def structure(data: Any, _: Any) -> Any:
            if data is None and optional:
                return None
            obj = self._structure_tagged(data, t)
            if not isinstance(obj, allowed):
                names = " | ".join(a.__name__ for a in allowed)
                raise MalformedDataError(
                    names, f"the tag {type(obj).__name__!r} names a class that is not a {names}")
            return obj
        return structure

    def _unstructure_tagged(self, obj: Any) -> dict[str, Any]:
        fn = self._tagged_fns.get(obj.__class__)
        if fn is None:
            fn = self._tagged_fn(type(obj))
        return fn(obj)

    def _tagged_fn(self, cls: type) -> Callable[[Any], dict[str, Any]]:
        if not self._is_tagged_class(cls):
            raise UnknownMessageTypeError(cls.__name__, self.tags)
        fn: Callable[[Any], dict[str, Any]]
        if self._generic:
            hook = self._c.get_unstructure_hook(cls)
            tag = cls.__name__

            def fn(obj: Any) -> dict[str, Any]:
                data = hook(obj)
                data["type"] = tag
                return typing.cast(dict[str, Any], data)
        else:
            fn = self._make_unstructure_fn(cls, tagged=True)
        self._tagged_fns[cls] = fn
        return fn

    def _lenient_structure_fn(self, t: Any) -> Callable[[Any, Any], Any]:
        """The structure function of a class holding an app's effect (or, in a snapshot
        written before apps, effects), reading an unknown tag as :class:`UndecodedEffect`."""
        if t is HistorySnapshot:
            return make_dict_structure_fn(t, self._c, app_effects=override(struct_hook=self._effects_hook))
        return make_dict_structure_fn(t, self._c, effect=override(struct_hook=self._effect_hook))

    def _effect_hook(self, data: Any, _: Any) -> Message | None:
        """An app's effect, or :class:`UndecodedEffect` if its tag is not known here."""
        if data is None:
            return None
        try:
            obj = self._structure_tagged(data, Message)
        except UnknownMessageTypeError as exc:
            if not isinstance(exc.tag, str):
                raise
            return UndecodedEffect(exc.tag, dump_json(data))
        if not isinstance(obj, Message):
            raise MalformedDataError("Message", f"the tag {type(obj).__name__!r} names a class that is not a Message")
        return obj

    def _effects_hook(self, data: Any, _: Any) -> tuple[Message, ...]:
        if not isinstance(data, list):
            raise MalformedDataError("effects", f"expected a JSON array, got {type(data).__name__}")
        return tuple(typing.cast(Message, self._effect_hook(item, None)) for item in data)

    def _structure_tagged(self, data: Any, _: Any) -> Any:
        if not isinstance(data, dict):
            raise MalformedDataError("tagged object", f"expected a JSON object, got {type(data).__name__}")
        tag = data.get("type")
        cls = (self._by_tag.get(tag) or registered_type(tag)) if isinstance(tag, str) else None
        if cls is None or not isinstance(tag, str):
            raise UnknownMessageTypeError(tag, self.tags)
        body = {k: v for k, v in data.items() if k != "type"}
        try:
            return self._c.get_structure_hook(cls)(body, cls)
        except (UnknownMessageTypeError, UnsupportedSchemaVersionError, MalformedDataError):
            raise
        except Exception as exc:
            specific = _find_specific(exc)
            if specific is not None:
                raise specific from exc
            raise MalformedDataError(tag, _describe(exc)) from exc

    @staticmethod
    def _actor_id(value: Any) -> ActorId:
        if not isinstance(value, str):
            raise MalformedDataError("ActorId", f"expected a 'kind/name' string, got {value!r}")
        try:
            return _parse_actor_id(value)
        except ValueError as exc:
            raise MalformedDataError("ActorId", str(exc)) from exc

    @staticmethod
    def _topic(value: Any) -> Topic:
        if not isinstance(value, str) or not value.startswith("#"):
            raise MalformedDataError("Topic", f"expected a '#name' string, got {value!r}")
        return Topic(value[1:])

    def _address(self, value: Any) -> ActorId | Topic:
        if isinstance(value, str) and value.startswith("#"):
            return Topic(value[1:])
        return self._actor_id(value)

    @staticmethod
    def _unstructure_address(value: ActorId | Topic) -> str:
        return f"#{value.name}" if isinstance(value, Topic) else str(value)

    @staticmethod
    def _datetime(value: Any) -> dt.datetime:
        if not isinstance(value, str):
            raise MalformedDataError("datetime", f"expected an ISO 8601 string, got {value!r}")
        try:
            parsed = dt.datetime.fromisoformat(value)
        except ValueError as exc:
            raise MalformedDataError("datetime", str(exc)) from exc
        if parsed.tzinfo is None:
            raise MalformedDataError("datetime", f"{value!r} has no UTC offset")
        return parsed


def _unstructure_datetime(value: dt.datetime) -> str:
    """``value.isoformat()`` (each entry written has one; see :func:`utc_iso_text`)."""
    text = utc_iso_text(value, False)
    return text if text is not None else value.isoformat()


def _undecoded_data(effect: UndecodedEffect) -> dict[str, Any]:
    """An effect this process could not decode, written back as it was stored."""
    data = load_json(effect.data)
    return typing.cast(dict[str, Any], data)


def _enum_value(value: enum.Enum) -> Any:
    return value.value


def _is_plain_enum(t: Any) -> bool:
    """An enum cattrs unstructures to its bare value (not a str or int enum, which the JSON
    converter passes through, nor one that declares its value's type)."""
    return (isinstance(t, type) and issubclass(t, enum.Enum) and not issubclass(t, (str, int))
            and "_value_" not in getattr(t, "__annotations__", {}))


def _is_homogeneous_tuple(t: Any) -> bool:
    """``tuple[X, ...]`` with a concrete ``X``."""
    args = typing.get_args(t)
    return (typing.get_origin(t) is tuple and len(args) == 2 and args[1] is Ellipsis
            and not isinstance(args[0], typing.TypeVar))


def _needs_generic(t: Any) -> bool:
    """A field type the generated functions leave to cattrs' own generator (type variables,
    generics of the class, ``Annotated`` overrides, ``Final``): none of the protocol's."""
    if t is None or isinstance(t, (str, typing.TypeVar)):
        return True
    if typing.get_origin(t) in (typing.Annotated, typing.Final) or t is typing.Final:
        return True
    return any(_needs_generic(a) for a in typing.get_args(t) if a is not Ellipsis)


@functools.lru_cache(maxsize=4096)
def _parse_actor_id(text: str) -> ActorId:
    # a thread's records name a handful of senders over and over: validate each once
    # (ActorId is frozen, so sharing one instance is safe)
    return ActorId.parse(text)


def check_schema_version(version: object) -> None:
    """Raise :class:`UnsupportedSchemaVersionError` unless ``version`` is readable."""
    if type(version) is not int or version not in SUPPORTED_SCHEMA_VERSIONS:
        raise UnsupportedSchemaVersionError(version, SUPPORTED_SCHEMA_VERSIONS)


def _find_specific(exc: BaseException) -> Exception | None:
    """The unknown-tag or unknown-version error buried in a cattrs exception group, if any."""
    if isinstance(exc, (UnknownMessageTypeError, UnsupportedSchemaVersionError)):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _find_specific(inner)
            if found is not None:
                return found
    return None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, cattrs.BaseValidationError):
        return "; ".join(cattrs.transform_error(exc, format_exception=_format_leaf))
    return f"{type(exc).__name__}: {exc}"


def _format_leaf(exc: BaseException, cls: type | None) -> str:
    if isinstance(exc, MalformedDataError):
        return exc.detail
    return cattrs.v.format_exception(exc, cls)


def _strict(cls: type[T]) -> Callable[[Any, Any], T]:
    def structure(value: Any, _: Any) -> T:
        # bool is an int in Python, never on the wire
        if not isinstance(value, cls) or (cls is int and isinstance(value, bool)):
            raise MalformedDataError(cls.__name__, f"expected {_JSON_NAMES[cls]}, got {value!r}")
        return value
    return structure


def _character_count(value: Any, what: str) -> int:
    if type(value) is not int or value < 0:
        raise MalformedDataError("Content", f"{what} must be a count of characters (an integer >= 0), got {value!r}")
    return value


def _structure_float(value: Any, _: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MalformedDataError("float", f"expected a number, got {value!r}")
    return float(value)


_JSON_NAMES: dict[type, str] = {str: "a string", int: "an integer", bool: "true or false"}


def make_converter(extra_types: Iterable[type] = ()) -> ProtocolConverter:
    """A new converter for every protocol type, every type registered in the process (apps'
    effects: see :func:`register_message_types`), plus ``extra_types``.

    ``extra_types`` are attrs classes known to this converter alone; each is tagged by its
    class name, so a user's message can travel in an envelope and be audited like the
    built-in ones. An app's effects need nothing here: declaring them in the app's
    ``effects`` registers them.
    """
    return ProtocolConverter(extra_types)
