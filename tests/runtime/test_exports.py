"""The public surface: every name in ``__all__`` exists, and nothing public is left out of it."""

from __future__ import annotations

import __future__
import importlib
import inspect
import pkgutil
import types
import typing

import pytest

import livecontext.protocol
import livecontext.protocol.kernel
import livecontext.protocol.wire
import livecontext.runtime
import livecontext.runtime.testing

PUBLIC_MODULES = [importlib.import_module(f"livecontext.protocol.{info.name}")
                  for info in pkgutil.iter_modules(livecontext.protocol.__path__) if not info.name.startswith("_")]
"""The protocol's public modules (``kernel``, ``agent``, ...): its package itself exports nothing."""

MODULES = [*PUBLIC_MODULES, livecontext.runtime, livecontext.runtime.testing]
REEXPORTING = {*PUBLIC_MODULES}
"""Modules that define nothing themselves: every public name in them is meant to be exported."""


def _owned(module: types.ModuleType, obj: object) -> bool:
    """Whether ``obj`` is defined by ``module`` or by one of its private submodules."""
    defined_in = getattr(obj, "__module__", None)
    if not isinstance(defined_in, str):
        return False
    return defined_in == module.__name__ or defined_in.startswith(module.__name__ + "._")


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_name_in_all_exists_once(module: types.ModuleType) -> None:
    names = list(module.__all__)
    assert len(names) == len(set(names)), "a name is listed twice in __all__"
    assert [n for n in names if not hasattr(module, n)] == []
    assert [n for n in names if n.startswith("_")] == []


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_nothing_public_is_missing_from_all(module: types.ModuleType) -> None:
    reexports = hasattr(module, "__path__") or module in REEXPORTING
    missing = []
    for name, obj in vars(module).items():
        if name.startswith("_") or name in module.__all__:
            continue
        if isinstance(obj, (types.ModuleType, __future__._Feature, typing.TypeVar)):
            continue
        # a package re-exports its private modules' API; a plain module may import helpers
        if reexports or _owned(module, obj):
            missing.append(name)
    assert missing == [], f"add to {module.__name__}.__all__ (or rename with a leading _): {missing}"


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_public_class_and_function_has_a_docstring(module: types.ModuleType) -> None:
    undocumented = []
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isclass(obj):
            doc = vars(obj).get("__doc__")
        elif inspect.isfunction(obj):
            doc = obj.__doc__
        else:
            continue
        if not (doc or "").strip():
            undocumented.append(name)
    assert undocumented == []


def test_the_kernel_api_is_public() -> None:
    expected = {
        "Actor", "handler", "open_runtime", "Runtime", "Context", "ActorRef", "RestartPolicy",
        "AuditEvent", "AuditRecord", "AuditHook", "ActorStoppedError", "AskTimeoutError",
        "AskCycleError", "DeadlockError", "UnhandledMessageError", "RemoteActorError",
        "MailboxFullError", "DuplicateActorError", "UnknownActorError", "SUPERVISION_TOPIC",
        "SUPERVISOR_ID", "SteppingScheduler", "Delivery", "RuntimeStatistics",
    }
    assert expected <= set(livecontext.runtime.__all__)
    assert {"explore", "run_seed", "open_stepping_runtime", "StallError", "SeedFailedError",
            "Exploration", "SeedRun", "SteppingScheduler"} <= set(livecontext.runtime.testing.__all__)
    assert {"ActorId", "Topic", "Envelope", "Message", "format_message_id",
            "message_id_time_ns"} <= set(livecontext.protocol.kernel.__all__)
    assert {"make_converter", "TAGGED_TYPES", "UnknownMessageTypeError", "UnsupportedSchemaVersionError",
            "MalformedDataError"} <= set(livecontext.protocol.wire.__all__)


def test_kernel_errors_derive_from_one_base_per_fault() -> None:
    from livecontext.runtime import ActorError, LivecontextError, UsageError

    for name in ("ActorStoppedError", "AskTimeoutError", "AskCycleError", "UnhandledMessageError",
                 "RemoteActorError", "MailboxFullError"):
        assert issubclass(getattr(livecontext.runtime, name), ActorError)
    for name in ("DuplicateActorError", "UnknownActorError"):
        assert issubclass(getattr(livecontext.runtime, name), UsageError)
    assert issubclass(ActorError, LivecontextError) and issubclass(UsageError, LivecontextError)
