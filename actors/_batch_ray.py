"""Batch runs on Ray (``livecontext batch --workers N [--ray ADDRESS]``; the ``ray`` extra).

N Ray actors each run chunks of the tasks file, one chunk at a time, each chunk in one
``trio.run`` (in the actor's thread) with up to ``concurrency`` tasks at once, all writing to
one shared store. The driver hands a worker its next chunk as its last one ends, and writes
each result line as its chunk comes back. A task runs in one place at a time: its thread's
single-writer lock. When a worker dies (``kill -9``), a new worker takes its chunk, each
task resumed from its log (a tool that started and never recorded a result is recorded as
interrupted, not re-run: DESIGN.md), up to :data:`MAX_LOST` times.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ray
import trio

from livecontext.runtime import UsageError

from ._batch import BatchTask, TaskResult, run_batch
from .blueprint import Blueprint, load_blueprint

OBJECT_STORE_BYTES = 80 * 1024 * 1024
"""The object store of a local cluster ``batch`` starts: results are small lines."""


def shared_store_url(url: str) -> str:
    """``url`` as every worker process can open it: a file store's path made absolute (a
    worker's folder is not the driver's).

    Raises:
        UsageError: ``memory:`` (each worker would have a store of its own).
    """
    scheme, sep, rest = url.partition(":")
    if url.startswith("memory:"):
        raise UsageError("a memory: store lives in one process; give Ray workers a shared store "
                         "(--store sqlite:PATH on one machine)")
    if scheme in ("sqlite", "jsonl") and sep and not rest.startswith("//"):
        return f"{scheme}:{os.path.abspath(rest)}"
    return url


def start_ray(address: str | None) -> None:
    """Join the Ray cluster at ``address``, or start a local one bound to 127.0.0.1.

    Raises:
        UsageError: no cluster answers at ``address``.
    """
    if address is not None:
        _check_reachable(address)
    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        if address is None:
            ray.init(address="local", include_dashboard=False, _node_ip_address="127.0.0.1",
                     object_store_memory=OBJECT_STORE_BYTES, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise UsageError(f"cannot join a Ray cluster at {address}: {str(exc).splitlines()[0]}; start one with "
                         "`ray start --head --node-ip-address 127.0.0.1` and give its address") from None


def _check_reachable(address: str) -> None:
    """Refuse at once an address ``HOST:PORT`` where nothing listens (ray.init would retry
    for minutes); other forms (``auto``, ``ray://...``) are left to Ray."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "//" in host:
        return
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as exc:
        raise UsageError(f"no Ray cluster answers at {address} ({exc.strerror or exc}); start one with "
                         "`ray start --head --node-ip-address 127.0.0.1` and give the address it prints") from None


@ray.remote
class BatchWorker:
    """One worker: a process hosting one Trio run at a time."""

    def __init__(self, blueprint_path: str) -> None:
        self._blueprint: Blueprint = load_blueprint(blueprint_path)

    def run_chunk(self, tasks: list[dict[str, Any]], store_url: str, batch: str, concurrency: int,
                  base_url: str | None, api_key: str | None) -> list[dict[str, Any]]:
        """Run ``tasks`` (as :func:`task_dict` gives them); their results, as dicts."""
        given = [BatchTask(t["id"], tuple(t["inputs"]), t["vars"], t["line"]) for t in tasks]

        async def go() -> list[TaskResult]:
            return await run_batch(self._blueprint, given, store_url, batch=batch, concurrency=concurrency,
                                   base_url=base_url, api_key=api_key)
        return [{**r.json(), "skipped": r.skipped} for r in trio.run(go)]


MAX_LOST = 2
"""How many times a chunk is handed to a new worker after its worker died."""


def _lost(batch: str, task: dict[str, Any], exc: BaseException) -> dict[str, Any]:
    """The result line of a task whose chunk could not be run."""
    return {"id": task["id"], "thread": f"{batch}/{task['id']}", "status": "failed", "result": None,
            "steps": 0, "tokens": 0, "error": f"worker lost: {str(exc).splitlines()[0]}", "skipped": False}


def task_dict(task: BatchTask) -> dict[str, Any]:
    """``task`` as plain data for a Ray call."""
    return {"id": task.id, "inputs": list(task.inputs), "vars": dict(task.vars), "line": task.line}


def run_on_ray(blueprint_path: str, tasks: Sequence[BatchTask], store_url: str, *, batch: str, workers: int,
               concurrency: int, address: str | None, on_result: Any, on_start: Any,
               base_url: str | None = None, api_key: str | None = None) -> list[TaskResult]:
    """Run ``tasks`` on ``workers`` Ray actors; ``on_start(n)`` as a chunk of n tasks starts,
    ``on_result(result)`` as each ends (in the driver). The cluster this started is shut down."""
    url = shared_store_url(store_url)
    started = not ray.is_initialized()
    start_ray(address)
    try:
        path = str(Path(blueprint_path).resolve())
        actors = [BatchWorker.remote(path) for _ in range(workers)]  # type: ignore[attr-defined]
        chunks = [[task_dict(t) for t in tasks[i:i + concurrency]] for i in range(0, len(tasks), concurrency)]
        pending: dict[Any, tuple[Any, list[dict[str, Any]], int]] = {}
        results: list[TaskResult] = []

        def submit(actor: Any, chunk: list[dict[str, Any]] | None = None, lost: int = 0) -> None:
            if chunk is None:
                if not chunks:
                    return
                chunk = chunks.pop(0)
                on_start(len(chunk))
            ref = actor.run_chunk.remote(chunk, url, batch, concurrency, base_url, api_key)
            pending[ref] = (actor, chunk, lost)

        for actor in actors:
            submit(actor)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            actor, chunk, lost = pending.pop(done[0])
            try:
                lines = ray.get(done[0])
            except ray.exceptions.RayActorError as exc:
                if lost < MAX_LOST:  # (its worker died: a new one resumes the chunk's threads from their logs)
                    submit(BatchWorker.remote(path), chunk, lost + 1)  # type: ignore[attr-defined]
                    continue
                lines = [_lost(batch, t, exc) for t in chunk]
                actor = None
            except ray.exceptions.RayError as exc:
                lines = [_lost(batch, t, exc) for t in chunk]
            for line in lines:
                skipped = bool(line.pop("skipped"))
                result = TaskResult(**line, skipped=skipped)
                results.append(result)
                on_result(result)
            if actor is not None:
                submit(actor)
            elif chunks:
                submit(BatchWorker.remote(path))  # type: ignore[attr-defined]
        return results
    finally:
        if started:
            ray.shutdown()
