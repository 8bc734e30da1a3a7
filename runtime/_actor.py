"""The :class:`Actor` base class and the ``@handler`` decorator.

``Actor`` is built on the kernel: its ``ctx`` is the runtime's :class:`Context`, and the cell
that runs it knows it only as a :class:`Behaviour` (its hooks and :meth:`Actor.handler_for`).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

from livecontext.protocol.kernel import Message

from ._cell import Handler

if TYPE_CHECKING:
    from ._runtime import Context

F = TypeVar("F", bound=Callable[..., Any])

_HANDLER_MARK = "__livecontext_handler__"
_INLINE_MARK = "__livecontext_inline__"


@overload
def handler(fn: F, /) -> F: ...


@overload
def handler(*, inline: bool = False) -> Callable[[F], F]: ...


def handler(fn: F | None = None, /, *, inline: bool = False) -> F | Callable[[F], F]:
    """Mark an ``async def`` method as the handler of the message type its annotation names.

    The method takes ``self`` and one message; the annotation of that message parameter names
    the type it handles (one handler per type). Its return value is the reply to an ``ask``
    (``None`` for a plain ``tell``)::

        class Counter(Actor):
            @handler
            async def on_add(self, msg: Add) -> Total:
                self.total += msg.n
                return Total(self.total)

    ``@handler(inline=True)`` marks a handler that cannot wait: a plain ``def`` (reads,
    bookkeeping, starting a background task, deferring its reply)::

        class Counter(Actor):
            @handler(inline=True)
            def on_get(self, msg: Get) -> Total:
                return Total(self.total)

    Its messages go through the mailbox like any other and it runs in the actor's own task,
    one message at a time, in mailbox order, under the same supervision; it is only called
    without an ``await`` (no coroutine to make and drive). ``inline=True`` on an ``async def``
    is refused when the class is defined.
    """
    def mark(f: F) -> F:
        is_async = inspect.iscoroutinefunction(f)  # (kept apart: as a condition it would narrow f)
        if not is_async and not inline:
            raise TypeError(f"@handler needs an 'async def' method, got {f!r}")
        setattr(f, _HANDLER_MARK, True)
        if inline:
            setattr(f, _INLINE_MARK, True)
        return f

    return mark if fn is None else mark(fn)


class Actor:
    """Base class of every actor.

    An actor handles one message at a time (so its own state needs no locks), through the
    methods marked ``@handler``. The runtime gives it a :class:`Context` (``self.ctx``) before
    :meth:`on_start`: its id, and the only way to send (``tell``, ``ask``, ``publish``), so the
    runtime stamps every envelope with the true sender.

    A message of a type with no handler is refused at the sender with
    :class:`UnhandledMessageError`, never dropped silently.
    """

    _handlers: ClassVar[dict[type, Handler]] = {}
    """The class's handlers (its bases' included), by the message type each handles."""
    ctx: Context

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        table: dict[type, Handler] = {}
        for base in reversed(cls.__mro__[1:]):
            table.update(getattr(base, "_handlers", {}))
        own: dict[type, Handler] = {}
        for name, fn in vars(cls).items():
            if getattr(fn, _HANDLER_MARK, False):
                if getattr(fn, _INLINE_MARK, False) and inspect.iscoroutinefunction(fn):
                    raise TypeError(
                        f"{cls.__name__}.{name}: an inline handler is called without await and may "
                        "not wait: make it a plain def, or drop inline=True"
                    )
                msg_type = _message_type_of(cls, name, fn)
                if msg_type in own:
                    raise TypeError(
                        f"{cls.__name__}.{own[msg_type].name} and {cls.__name__}.{name} both handle "
                        f"{msg_type.__name__}: keep one handler per message type"
                    )
                own[msg_type] = Handler(name, False)
        table.update(own)
        # a subclass may override a base's handler method: whether it is inline is the override's
        cls._handlers = {t: Handler(h.name, getattr(getattr(cls, h.name, None), _INLINE_MARK, False))
                         for t, h in table.items()}

    async def on_start(self) -> None:
        """Called before the first message (and after every restart): load state here."""

    async def on_stop(self) -> None:
        """Called once the mailbox is drained at an orderly stop."""

    def capability_for(self, message_type: type) -> Hashable | None:
        """The capability a sender needs for ``message_type`` (``None``: anyone may send it).

        The runtime checks it against what the sender was granted at spawn, before the
        handler runs; a sender without it gets :meth:`on_denied`'s reply instead.
        """
        return None

    async def on_denied(self, message: Message, capability: Hashable) -> Message | None:
        """Called instead of the handler when the sender lacks ``capability``; returns the reply.

        The default raises :class:`PermissionError`, which reaches an asker as an error.
        """
        raise PermissionError(f"{self.ctx.self_id} refuses {type(message).__name__}: the sender lacks {capability!r}")

    @classmethod
    def handled_types(cls) -> tuple[type, ...]:
        """The message types this actor class handles."""
        return tuple(cls._handlers)

    @classmethod
    def handler_for(cls, message_type: type) -> Handler | None:
        """The handler of ``message_type`` (or of its nearest base class that has one), or ``None``."""
        table = cls._handlers
        found = table.get(message_type)
        if found is not None:
            return found
        for base in message_type.__mro__[1:]:
            found = table.get(base)
            if found is not None:
                return found
        return None


def _message_type_of(cls: type, name: str, fn: Callable[..., Any]) -> type:
    params = list(inspect.signature(fn).parameters.values())
    if len(params) != 2:
        raise TypeError(f"{cls.__name__}.{name}: a handler takes (self, message), got {len(params)} parameters")
    module = inspect.getmodule(fn)
    try:
        hints = typing.get_type_hints(fn, globalns=vars(module) if module else None)
    except NameError as exc:
        raise TypeError(
            f"{cls.__name__}.{name}: cannot resolve the message annotation ({exc}); "
            "define the message class at module level"
        ) from exc
    msg_type = hints.get(params[1].name)
    if not isinstance(msg_type, type) or not issubclass(msg_type, Message):
        raise TypeError(
            f"{cls.__name__}.{name}: annotate the message parameter with a Message subclass, "
            f"got {msg_type!r}"
        )
    return msg_type

