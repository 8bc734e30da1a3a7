"""Batch runs on Ray (``livecontext batch --workers N [--ray ADDRESS]``; the ``ray`` extra).

Each of N Ray actors (:class:`BatchWorker`) is one process hosting one ``trio.run`` for its
whole life, in a thread of its own, with the store opened once; ``concurrency`` runners in it
pull tasks from one channel (:func:`~livecontext.actors.batch._batch.serve_tasks`, the loop the
in-process batch runs too). The driver keeps each worker holding ``concurrency`` tasks: one
call per worker is in flight at a time, :meth:`BatchWorker.exchange`, which hands it new tasks
and returns the results that ended since the last call (waiting up to a second for one), so
results reach the results file and the progress bar as each task ends.

A task runs in one place at a time (its thread's single-writer lease). When a worker dies
(``kill -9``, a lost machine), the driver puts the tasks it held back at the head of the queue
and starts a new worker; whoever takes a task resumes it from its log (a tool that started
and never recorded a result is recorded as interrupted, not re-run: DESIGN.md). A task lost
with its worker more than :data:`MAX_LOST` times fails ("worker lost"), not the batch.
"""

from __future__ import annotations

import os
import queue
import socket
import threading
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import ray
import trio

from livecontext.protocol.history import UsageTotals
from livecontext.runtime import LivecontextError, UsageError, error_leaves

from livecontext.runtime.persistence import open_store

from ._batch import BatchTask, TaskResult, check_tasks, entry_agent, serve_tasks
from ..blueprint import Blueprint, SystemBlueprint, load_any_blueprint

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


def start_ray(address: str | None, workers: int = 1) -> None:
    """Join the Ray cluster at ``address``, or start a local one bound to 127.0.0.1 with a
    CPU for each of ``workers`` (at least the machine's cores).

    Raises:
        UsageError: no cluster answers at ``address``.
    """
    if address is not None:
        _check_reachable(address)
    if ray.is_initialized():
        return

    try:
        if address is None:
            ray.init(address="local", include_dashboard=False, _node_ip_address="127.0.0.1",
                     num_cpus=max(workers, os.cpu_count() or 1), object_store_memory=OBJECT_STORE_BYTES,
                     log_to_driver=False)
        else:
            host = address.rpartition(":")[0]
            # (a cluster on this machine's loopback: this driver's node is there too, not on the
            # machine's other address, which Ray would pick)
            node_ip = "127.0.0.1" if host in ("127.0.0.1", "localhost") else None
            ray.init(address=address, log_to_driver=False, _node_ip_address=node_ip)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise UsageError(f"cannot join a Ray cluster at {address}: {str(exc).splitlines()[0]}; start one with "
                         "`ray start --head --node-ip-address 127.0.0.1` and give its address (a cluster with token "
                         "authentication needs its token in ~/.ray/auth_token or $RAY_AUTH_TOKEN)") from None



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


@ray.remote(num_cpus=1)
class BatchWorker:
    """One worker process: a ``trio.run`` in a thread of its own, serving tasks until closed.

    It asks Ray for one CPU, so a cluster places one worker per core (Python runs one core).

    Ray calls its methods in another thread; they reach the Trio run through its token
    (:func:`trio.from_thread.run_sync`) and read results from a thread-safe queue.
    """

    def __init__(self, blueprint_path: str, store_url: str, concurrency: int,
                 base_url: str | None, api_key: str | None) -> None:
        self._blueprint: Blueprint | SystemBlueprint = load_any_blueprint(blueprint_path)
        self._settings = (store_url, concurrency, base_url, api_key)
        self._results: queue.Queue[TaskResult] = queue.Queue()
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._send: trio.MemorySendChannel[tuple[BatchTask, str]] | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._thread = threading.Thread(target=self._run, name="livecontext-batch-worker", daemon=True)
        self._thread.start()
        self._ready.wait()  # (a failure to start is raised by the first exchange: a task error, not a dead actor)

    def _run(self) -> None:
        try:
            trio.run(self._serve)
        except BaseException as exc:  # noqa: BLE001 -- kept, and raised by the next call from the driver
            self._failure = exc
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        store_url, concurrency, base_url, api_key = self._settings
        send, receive = trio.open_memory_channel[tuple[BatchTask, str]](float("inf"))
        async with await open_store(store_url) as store:
            self._send, self._token = send, trio.lowlevel.current_trio_token()
            self._ready.set()

            def done(kind: str, result: TaskResult | None) -> None:
                if result is not None:
                    self._results.put(result)
            await serve_tasks(self._blueprint, receive, store, concurrency=concurrency, on_event=done,
                              base_url=base_url, api_key=api_key)

    def _check(self) -> None:
        if self._failure is not None:
            raise WorkerFailed(f"{type(self._failure).__name__}: {_first_line(self._failure)}") from self._failure

    def ready(self) -> None:
        """Answer once placed and started (a failure to start is raised by :meth:`exchange`)."""

    def exchange(self, tasks: list[tuple[BatchTask, str]], wait_s: float) -> list[TaskResult]:
        """Take ``tasks``; return the results of the tasks that ended since the last call,
        waiting up to ``wait_s`` for a first one."""
        self._check()
        if tasks:  # (one call into the Trio run for them all: each call waits for its scheduler's next turn)
            trio.from_thread.run_sync(self._put, tasks, trio_token=self._token)
        ended: list[TaskResult] = []
        try:
            ended.append(self._results.get(timeout=wait_s))
            while True:
                ended.append(self._results.get_nowait())
        except queue.Empty:
            pass
        self._check()
        return ended

    def _put(self, tasks: list[tuple[BatchTask, str]]) -> None:
        assert self._send is not None  # (set before __init__ returns)
        for task in tasks:
            self._send.send_nowait(task)

    def close(self) -> None:
        """End the Trio run once its tasks have ended (the driver gives no more)."""
        if self._thread.is_alive():
            trio.from_thread.run_sync(self._close_channel, trio_token=self._token)
            self._thread.join()
        self._check()

    def _close_channel(self) -> None:
        assert self._send is not None
        self._send.close()


class WorkerFailed(LivecontextError):
    """A worker's Trio run ended by an error (its store could not be opened, a bug): every
    worker would meet it, so the batch stops and says it."""


def _first_line(exc: BaseException) -> str:
    for leaf in error_leaves(exc):
        return str(leaf).splitlines()[0] if str(leaf) else type(leaf).__name__
    return type(exc).__name__


MAX_LOST = 2
"""How many times a task may be lost with its worker before it fails ("worker lost")."""
PLACE_TIMEOUT_S = 120.0
"""How long the driver waits for Ray to place and start a worker before it says why not."""
WAIT_S = 1.0
"""How long one exchange waits for a first result before it returns with none."""


def run_on_ray(blueprint_path: str, tasks: Sequence[BatchTask], store_url: str, *, batch: str, workers: int,
               concurrency: int, address: str | None, on_result: Callable[[TaskResult], None],
               on_start: Callable[[int], None], base_url: str | None = None,
               api_key: str | None = None) -> list[TaskResult]:
    """Run ``tasks`` on ``workers`` Ray actors; ``on_start(n)`` as n tasks are handed out,
    ``on_result(result)`` as each ends (in the driver). The cluster this started is shut down.

    Raises:
        UsageError: a task's thread id is not valid, no cluster answers at ``address``, or
            a worker could not start (its store cannot be opened...).
    """
    url = shared_store_url(store_url)
    bp = load_any_blueprint(blueprint_path)
    queued = deque(zip(tasks, check_tasks(bp, tasks, batch)))
    started = not ray.is_initialized()
    made: list[Any] = []
    """Every worker this run made: each is killed when the run ends (its CPU freed at once,
    not when Ray collects its handle)."""
    start_ray(address, workers)
    try:
        cpus = ray.cluster_resources().get("CPU", 0)  # type: ignore[no-untyped-call]
        if cpus < workers:
            raise UsageError(f"the Ray cluster has {cpus:g} CPUs and each of --workers {workers} needs one; "
                             f"give --workers {int(cpus)} or add nodes (`ray start --address ...`)")
        path = str(Path(blueprint_path).resolve())

        def new_worker() -> Any:
            worker = BatchWorker.remote(path, url, concurrency, base_url, api_key)  # type: ignore[attr-defined]
            made.append(worker)
            placed, _ = ray.wait([worker.ready.remote()], timeout=PLACE_TIMEOUT_S)
            if not placed:
                free = ray.available_resources().get("CPU", 0)  # type: ignore[no-untyped-call]
                raise UsageError(f"Ray placed no batch worker within {PLACE_TIMEOUT_S:g} s ({free:g} CPUs free of "
                                 f"{cpus:g}: another job holds them?); free CPUs or give fewer --workers")
            return worker

        holding: dict[Any, dict[str, tuple[BatchTask, str]]] = {}
        """What each live worker holds: task id -> (task, thread)."""
        calls: dict[Any, Any] = {}
        """The one call in flight of each live worker: call ref -> worker."""
        lost: dict[str, int] = {}
        results: list[TaskResult] = []

        def feed(worker: Any) -> None:
            held = holding[worker]
            given = [queued.popleft() for _ in range(min(len(queued), concurrency - len(held)))]
            if given:
                on_start(len(given))
            held.update((task.id, (task, thread)) for task, thread in given)
            if held:
                calls[worker.exchange.remote(given, WAIT_S)] = worker
            else:
                del holding[worker]
                ray.get(worker.close.remote())

        for _ in range(min(workers, len(queued))):
            worker = new_worker()
            holding[worker] = {}
            feed(worker)
        while calls:
            [ref], _ = ray.wait(list(calls), num_returns=1)
            worker = calls.pop(ref)
            try:
                ended: list[TaskResult] = ray.get(ref)
            except ray.exceptions.RayActorError as exc:  # (the worker died: its tasks go to others)
                for task, thread in reversed(list(holding.pop(worker).values())):
                    lost[task.id] = lost.get(task.id, 0) + 1
                    if lost[task.id] > MAX_LOST:
                        shown = f"{thread}.{entry_agent(bp, task).name}" if isinstance(bp, SystemBlueprint) else thread
                        result = TaskResult(task.id, shown, "failed", None, 0, UsageTotals(),
                                            f"worker lost {lost[task.id]} times: {_first_line(exc)}")
                        results.append(result)
                        on_result(result)
                    else:
                        queued.appendleft((task, thread))
                if queued:
                    holding[replacement := new_worker()] = {}
                    feed(replacement)
                continue
            except ray.exceptions.RayTaskError as exc:
                raise UsageError(f"a batch worker stopped: {_first_line(exc.cause or exc)}") from None
            for result in ended:
                holding[worker].pop(result.id, None)
                results.append(result)
                on_result(result)
            feed(worker)
        return results
    finally:
        for worker in made:
            ray.kill(worker)
        if started:
            ray.shutdown()
