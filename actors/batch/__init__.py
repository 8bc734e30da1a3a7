"""Batches: running many tasks, each an agent or a system on a thread of one store, here
(:func:`run_batch`) or on a Ray cluster (:func:`run_on_ray`), with their results file.

Its modules are imported on first use of a name (see ``__getattr__``): a batch run here
does not load Ray."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from livecontext._lazy import attribute, names

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

__all__ = [*_HOMES]

if TYPE_CHECKING:  # (type checkers run no __getattr__: the names of _HOMES, with their types)
    from ._batch import (
        BatchTask as BatchTask,
        TaskResult as TaskResult,
        batch_name as batch_name,
        check_tasks as check_tasks,
        ray_environment as ray_environment,
        read_tasks as read_tasks,
        run_batch as run_batch,
        unset_placeholders as unset_placeholders,
    )
    from ._batch_ray import run_on_ray as run_on_ray
    from ._batch_results import ResultsFile as ResultsFile


def __getattr__(name: str) -> Any:
    return attribute(__name__, _HOMES, name)


def __dir__() -> list[str]:
    return names(__name__, _HOMES)
