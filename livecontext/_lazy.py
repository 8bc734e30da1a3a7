"""Names of a package imported on first use (PEP 562), read from one table: name -> module.

A package that exports names from several modules but should not import them all when one
of its modules is imported (the front door, ``livecontext.actors`` and its wings ``agent``,
``system``, ``batch``) keeps one table, ``_HOMES``, and hands it to these two functions::

    _HOMES = {"spawn_agent": "_agent", "AppHost": "_host"}   # name -> module, relative to the package
    __all__ = [*_HOMES]

    def __getattr__(name: str) -> Any:
        return attribute(__name__, _HOMES, name)

    def __dir__() -> list[str]:
        return names(__name__, _HOMES)

(For type checkers and IDEs, which run no ``__getattr__``, such a package also imports its
names under ``if TYPE_CHECKING:``, each as itself; tests/test_lazy_exports.py checks that
this block and the table name the same things.)

This module imports nothing the interpreter has not loaded already and nothing of ours, so
every layer may import it (pyproject.toml's import contract puts it below ``protocol``).
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # (not typing's: the front door imports this module on its first use of a name)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def attribute(package: str, homes: Mapping[str, str], name: str) -> Any:
    """The package's ``name``, imported from its module in ``homes`` and kept in the package.

    Raises:
        AttributeError: ``name`` is not in ``homes`` (as for any module without it).
    """
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{home}"), name)
    setattr(sys.modules[package], name, value)  # (the next use is a plain attribute)
    return value


def names(package: str, homes: Mapping[str, str]) -> list[str]:
    """What ``dir(package)`` lists: what it holds so far, and every name it exports."""
    return sorted(set(vars(sys.modules[package])) | set(homes))
