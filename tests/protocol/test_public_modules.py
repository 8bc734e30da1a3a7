"""The protocol's names live in a few public modules (``kernel``, ``history``, ``agent``, ``context``,
``system``, ``records``, ``wire``), each with its own ``__all__``; the package re-exports nothing.

(That every name in each ``__all__`` exists, and nothing public is left out of it, is checked
with the runtime's in tests/runtime/test_exports.py.)
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
import types
from collections import Counter
from pathlib import Path

import pytest

import livecontext.protocol
from livecontext.protocol.kernel import Message
from livecontext.protocol.wire import CHANNELS, TAGGED_TYPES

PUBLIC_MODULES = [importlib.import_module(f"livecontext.protocol.{info.name}")
                  for info in pkgutil.iter_modules(livecontext.protocol.__path__) if not info.name.startswith("_")]
PRIVATE_MODULES = [importlib.import_module(f"livecontext.protocol.{info.name}")
                   for info in pkgutil.iter_modules(livecontext.protocol.__path__) if info.name.startswith("_")]


def _exporters(obj: object) -> list[str]:
    """The public modules whose ``__all__`` names ``obj`` (the object itself, not an equal one)."""
    return [module.__name__ for module in PUBLIC_MODULES
            if any(getattr(module, name) is obj for name in module.__all__)]


def test_there_are_a_handful_of_public_modules_each_with_a_short_all() -> None:
    assert {m.__name__.rsplit(".", 1)[1] for m in PUBLIC_MODULES} == {
        "kernel", "history", "agent", "context", "system", "records", "wire", "mcp"}
    assert all(0 < len(m.__all__) <= 80 for m in PUBLIC_MODULES), {m.__name__: len(m.__all__) for m in PUBLIC_MODULES}


def test_no_name_is_exported_by_two_public_modules() -> None:
    counts = Counter(name for module in PUBLIC_MODULES for name in module.__all__)
    assert [name for name, n in counts.items() if n > 1] == []


def test_every_tagged_class_and_every_channel_is_exported_by_exactly_one_public_module() -> None:
    assert {cls.__name__: _exporters(cls) for cls in TAGGED_TYPES if len(_exporters(cls)) != 1} == {}
    assert [channel for channel in CHANNELS if len(_exporters(channel)) != 1] == []


def test_every_message_class_and_every_public_name_of_the_private_modules_is_exported() -> None:
    # (the implementation's helpers for the converter are the exceptions, named here)
    helpers = {"SHARED_MIN", "common_prefix", "common_suffix", "structure_content", "unstructure_content",
               "structure_text_change", "unstructure_text_change", "T"}
    exported = {id(getattr(m, name)) for m in PUBLIC_MODULES for name in m.__all__}
    missing = []
    for module in PRIVATE_MODULES:
        for name, obj in vars(module).items():
            if name.startswith("_") or name in helpers or isinstance(obj, types.ModuleType):
                continue
            defined_here = getattr(obj, "__module__", module.__name__) == module.__name__
            if defined_here and id(obj) not in exported and not _is_imported_helper(name):
                missing.append(f"{module.__name__}.{name}")
    assert missing == [], "export these from the public module that holds their kind (or rename with a leading _)"
    # (attrs makes a slotted class anew: the class it replaced lingers among the subclasses
    # until the garbage collector frees it, so only the class its module names is counted)
    messages = [cls for cls in _subclasses(Message) if cls.__module__.startswith("livecontext.protocol.")
                and getattr(sys.modules[cls.__module__], cls.__qualname__, None) is cls]
    assert len(messages) > 100
    assert [cls.__name__ for cls in messages if len(_exporters(cls)) != 1] == []


def _is_imported_helper(name: str) -> bool:
    """Names every module has by importing them (``annotations``, ``frozen``, ``dt``...)."""
    return name in {"annotations", "frozen", "field", "Factory", "Any", "Callable", "Iterable", "get_args",
                    "identity", "make_dict_structure_fn", "make_dict_unstructure_fn", "override"}


def _subclasses(cls: type) -> list[type]:
    found, todo = [], [cls]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.append(sub)
            todo.append(sub)
    return found


def test_the_package_exports_no_name_of_its_own_and_its_docstring_lists_each_public_module() -> None:
    assert not hasattr(livecontext.protocol, "__all__")
    public = [name for name, obj in vars(livecontext.protocol).items()
              if not name.startswith("_") and not isinstance(obj, types.ModuleType)]
    assert public == []
    listed = re.findall(r":mod:`livecontext\.protocol\.(\w+)`", livecontext.protocol.__doc__ or "")
    assert sorted(listed) == sorted(m.__name__.rsplit(".", 1)[1] for m in PUBLIC_MODULES)


def test_no_module_of_the_protocol_imports_by_star() -> None:
    folder = Path(livecontext.protocol.__file__).parent
    starred = [path.name for path in folder.glob("*.py") if re.search(r"^\s*from\s+\S+\s+import\s+\*", path.read_text(), re.M)]
    assert starred == []


def test_a_name_imported_from_the_package_as_before_is_its_modules_object_with_a_warning_naming_that_module() -> None:
    from livecontext.protocol.agent import RunUntilIdle

    with pytest.warns(DeprecationWarning, match=r"import RunUntilIdle from livecontext\.protocol\.agent"):
        from livecontext.protocol import RunUntilIdle as old  # type: ignore[attr-defined]
    assert old is RunUntilIdle


def test_a_name_no_public_module_exports_is_an_attribute_error_and_a_module_still_imports() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
        livecontext.protocol.NoSuchThing  # noqa: B018
    from livecontext.protocol import agent

    assert agent.__name__ == "livecontext.protocol.agent"
