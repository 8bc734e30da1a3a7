"""Batches: running many tasks, each an agent or a system on a thread of one store, here
(:func:`run_batch`) or on a Ray cluster (:func:`run_on_ray`), with their results file.

Its modules are imported on first use of a name (see ``__getattr__``): a batch run here
does not load Ray."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (for type checkers and readers; at run time, see __getattr__)
    from ._batch import (
        BatchTask,
        TaskResult,
        batch_name,
        check_tasks,
        ray_environment,
        read_tasks,
        run_batch,
        unset_placeholders,
    )
    from ._batch_ray import run_on_ray
    from ._batch_results import ResultsFile

_HOMES = {
    "BatchTask": "_batch",
    "ResultsFile": "_batch_results",
    "TaskResult": "_batch",
    "batch_name": "_batch",
    "check_tasks": "_batch",
    "ray_environment": "_batch",
    "read_tasks": "_batch",
    "run_batch": "_batch",
    "run_on_ray": "_batch_ray",
    "unset_placeholders": "_batch",
}
"""The module of this package that defines each name."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "BatchTask",
    "ResultsFile",
    "TaskResult",
    "batch_name",
    "check_tasks",
    "ray_environment",
    "read_tasks",
    "run_batch",
    "run_on_ray",
    "unset_placeholders",
]
