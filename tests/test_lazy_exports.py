"""The packages that import their names on first use (the front door, ``livecontext.actors`` and its
wings ``agent``, ``system``, ``batch``) each keep one table of their names, ``_HOMES``: their
``__all__`` and ``__getattr__`` read it, and the block that shows the names to type checkers
(``if TYPE_CHECKING:``, which no ``__getattr__`` reaches) names the same ones, from the same modules.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

import livecontext
import livecontext.actors
import livecontext.actors.agent
import livecontext.actors.batch
import livecontext.actors.system

PACKAGES = ["livecontext", "livecontext.actors", "livecontext.actors.agent", "livecontext.actors.system",
            "livecontext.actors.batch"]


def _type_checking_imports(package: str) -> dict[str, str]:
    """Each name the package's ``if TYPE_CHECKING:`` block imports -> the module it names."""
    source = Path(importlib.import_module(package).__file__ or "").read_text()
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if not isinstance(statement, ast.ImportFrom) or statement.module == "typing":
                    continue
                module = importlib.util.resolve_name("." * statement.level + (statement.module or ""), package)
                for alias in statement.names:
                    assert alias.asname == alias.name, f"{package}: import {alias.name} as itself (a re-export)"
                    found[alias.name] = module
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_the_type_checkers_block_names_the_names_of_the_table_from_their_modules(package: str) -> None:
    homes = importlib.import_module(package)._HOMES
    assert _type_checking_imports(package) == {name: f"{package}.{home}" for name, home in homes.items()}


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_the_table_and_each_name_is_the_object_its_module_defines(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == list(module._HOMES)
    for name, home in module._HOMES.items():
        assert getattr(module, name) is getattr(importlib.import_module(f"{package}.{home}"), name)
    assert set(module.__all__) <= set(dir(module))


def test_a_name_not_in_the_table_is_an_attribute_error_naming_the_package() -> None:
    with pytest.raises(AttributeError, match=r"^module 'livecontext\.actors\.batch' has no attribute 'run_later'$"):
        livecontext.actors.batch.run_later  # noqa: B018
    with pytest.raises(AttributeError, match=r"^module 'livecontext' has no attribute 'Agents'$"):
        livecontext.Agents  # noqa: B018
