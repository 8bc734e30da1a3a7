"""Every error class livecontext defines derives from ``LivecontextError`` (STYLE.md: one base
class), so that ``except LivecontextError`` catches all that we raise on purpose."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from livecontext.protocol.wire import LivecontextError


def _modules() -> list[str]:
    """Every module of the package (its three layers are installed from separate folders)."""
    names = ["livecontext"]
    for layer in ("protocol", "runtime", "actors"):
        package = importlib.import_module(f"livecontext.{layer}")
        names.append(package.__name__)
        names += [info.name for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return names


def test_every_exception_class_defined_in_the_package_derives_from_livecontext_error() -> None:
    outside: list[str] = []
    checked = 0
    for name in _modules():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            # (warnings are not errors: they derive from Warning and are never raised to stop)
            if cls.__module__ != name or not issubclass(cls, BaseException) or issubclass(cls, Warning):
                continue
            checked += 1
            if not issubclass(cls, LivecontextError):
                outside.append(f"{name}.{cls.__qualname__}")
    assert checked >= 40, f"only {checked} exception classes found: is the walk missing modules?"
    assert outside == [], f"derive these from LivecontextError (or a subclass of it): {outside}"


def test_the_runtime_and_the_protocol_share_one_base_class() -> None:
    from livecontext.protocol.wire import ProtocolError
    from livecontext.runtime import LivecontextError as RuntimeBase

    assert RuntimeBase is LivecontextError
    assert issubclass(ProtocolError, RuntimeBase)
