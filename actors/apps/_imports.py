"""Apps and tools named by import path (``module:name``): blueprints, flags, thread records."""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from ._app import App
from ._errors import AppDefinitionError, ToolDefinitionError


def load_object(path: str, what: str, error: type[Exception] = ToolDefinitionError) -> Any:
    """The object an import path ``module:name`` (or ``module:Outer.name``) names.

    Raises:
        ToolDefinitionError: the path is malformed, the module cannot be imported or has no
            such name (the message names the path and what was found).
    """
    module_name, sep, qualname = path.partition(":")
    if not sep or not module_name or not qualname:
        raise error(
            f"{what} {path!r} is not an import path: write module:name, such as mypkg.tools:search")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise error(f"{what} {path!r}: cannot import module {module_name!r} ({exc})") from None
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise error(
                f"{what} {path!r}: module {module_name!r} has no {qualname!r}") from None
    return target


def make_app(path: str, options: Mapping[str, Any] | None = None) -> App:
    """A new app of the class ``path`` names, made with ``options`` as keyword arguments
    (remembered as :attr:`App.made_with`, so its thread records them).

    Raises:
        AppDefinitionError: the path names no App class, or the class cannot be made with
            those options (the message names the path and what was found or raised).
    """
    target = load_object(path, "app", AppDefinitionError)
    if not (isinstance(target, type) and issubclass(target, App)):
        raise AppDefinitionError(
            f"app {path!r} is {describe_object(target)}, not an App class: name a subclass of livecontext.App")
    try:
        app = target(**dict(options or {}))
    except Exception as exc:  # noqa: BLE001 - any failure of the app's constructor is reported as such
        given = ", ".join(sorted(options or {})) or "no options"
        raise AppDefinitionError(
            f"app {path!r} cannot be made with {given}: {type(exc).__name__}: {exc}") from None
    if options:
        app.made_with = dict(options)
    return app


def describe_object(value: object) -> str:
    """What a message calls ``value``: ``the class Shelf``, ``an int``."""
    if isinstance(value, type):
        return f"the class {value.__qualname__}"
    kind = type(value).__name__
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


@contextlib.contextmanager
def importable(folder: str) -> Iterator[None]:
    """``folder`` first on ``sys.path`` while the block runs (nothing if empty or already there).

    What is imported stays imported; the folder is taken off again so that one blueprint's
    folder does not shadow modules for the rest of the process."""
    if not folder or folder in sys.path:
        yield
        return
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
