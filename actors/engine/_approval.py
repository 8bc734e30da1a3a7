"""Which tool calls need a person's approval before they run: :class:`ApprovalPolicy`.

A call needs approval if its tool says so (``@tool(approval=True)``: ``ToolSpec.approval``), if
its tool's name is in the policy's :attr:`~ApprovalPolicy.names`, or if the policy's
:attr:`~ApprovalPolicy.check` function says so for that call. The engine asks the policy when
it reaches a call; how it then records the request and waits is in :mod:`._engine`
(``_step_tool``) and ``protocol._approvals``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from attrs import field, frozen

from livecontext.protocol.history import ToolCall, ToolSpec
from livecontext.runtime import UsageError

ApprovalCheck = Callable[[ToolCall, ToolSpec | None], bool]
"""A policy function: given a call and its tool's spec (``None``: no such tool), whether the
call needs approval."""


def _names(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


@frozen(eq=False)
class ApprovalPolicy:
    """Which calls need approval besides those whose tool requires it (``@tool(approval=True)``).

    Make one with :meth:`of` from what a user gives: a function, a list of tool names, or an
    import path ``module:function``.
    """

    names: frozenset[str] = field(default=frozenset(), converter=_names)
    """Tools every call of which needs approval."""
    check: ApprovalCheck | None = None
    """A function deciding per call (compared by :attr:`path`, not by identity)."""
    path: str = ""
    """The import path of :attr:`check` (``module:function``), kept in the thread's record so
    that a resumed thread keeps the function; empty for a function given as an object."""

    def needs(self, call: ToolCall, spec: ToolSpec | None) -> bool:
        """Whether ``call`` needs approval before it runs."""
        if spec is not None and spec.approval:
            return True
        if call.name in self.names:
            return True
        return self.check is not None and bool(self.check(call, spec))

    @classmethod
    def of(cls, value: Any) -> ApprovalPolicy:
        """The policy ``value`` gives: an :class:`ApprovalPolicy` as it is, ``None`` (none), a
        function ``(call, spec) -> bool``, an import path ``"module:function"`` of one, or an
        iterable of tool names.

        Raises:
            UsageError: ``value`` is none of those, or the path names no function.
        """
        if value is None:
            return cls()
        if isinstance(value, ApprovalPolicy):
            return value
        if isinstance(value, str):
            if ":" in value:
                return cls(check=import_check(value), path=value)
            raise UsageError(f"approval={value!r}: give a list of tool names (['pay']), a function "
                             "(call, spec) -> bool, or its import path 'module:function'")
        if callable(value):
            return cls(check=value, path=_path_of(value))
        try:
            names = list(value)
        except TypeError:
            raise UsageError(f"approval must be a list of tool names, a function (call, spec) -> bool or its "
                             f"import path, got {type(value).__name__} {value!r}") from None
        bad = [n for n in names if not isinstance(n, str) or not n.strip()]
        if bad:
            raise UsageError(f"approval lists tool names; {bad[0]!r} is not one")
        return cls(names=names)

    def with_names(self, names: Iterable[str]) -> ApprovalPolicy:
        """This policy with ``names`` added."""
        return ApprovalPolicy(self.names | frozenset(names), self.check, self.path)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ApprovalPolicy):
            return NotImplemented
        same_check = (self.check is other.check) if not (self.path or other.path) else self.path == other.path
        return self.names == other.names and same_check

    def __hash__(self) -> int:
        return hash((self.names, self.path))

    def __bool__(self) -> bool:
        return bool(self.names) or self.check is not None


NO_APPROVALS = ApprovalPolicy()
"""No call needs approval but those whose tool requires it."""


def import_check(path: str) -> ApprovalCheck:
    """The policy function at ``path`` (``module:function``).

    Raises:
        UsageError: the module cannot be imported, or it holds no function of that name.
    """
    module_name, _, name = path.partition(":")
    if not module_name.strip() or not name.strip():
        raise UsageError(f"approval policy {path!r}: give it as module:function")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"approval policy {path!r}: cannot import {module_name} ({exc}); check the path "
                         "(the current folder is importable)") from None
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        raise UsageError(f"approval policy {path!r}: {module_name} has no function {name}; give a function "
                         "(call, spec) -> bool")
    return fn  # type: ignore[no-any-return]


def _path_of(fn: Callable[..., Any]) -> str:
    """``fn``'s import path if importing it gives it back (a module-level function), else ``""``."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or not qualname or "<" in qualname or module == "__main__":
        return ""
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return ""
    return f"{module}:{qualname}" if found is fn else ""
