"""Helpers for the tests that run the real ``livecontext`` command (durability, CLI, batch): its
environment, scripts and stores."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import trio

LIVECONTEXT = [sys.executable, "-c", "from livecontext._command import main; main()"]
"""The ``livecontext`` command (its installed entry point), run by this interpreter (no
dependence on PATH)."""


def cli_env() -> dict[str, str]:
    """The environment of a ``livecontext`` child: ours, minus a store or fsync override."""
    env = dict(os.environ)
    env.pop("LIVECONTEXT_STORE", None)
    env.pop("LIVECONTEXT_FSYNC", None)
    return env


async def run_cli(*args: str, cwd: Path | None = None,
                  import_from: Sequence[Path] = ()) -> subprocess.CompletedProcess[str]:
    """Run ``livecontext ARGS`` to completion and capture its output as text (``import_from``:
    folders put first on its import path, where a thread's own apps are)."""
    env = cli_env()
    if import_from:
        env["PYTHONPATH"] = os.pathsep.join([*map(str, import_from), *filter(None, [env.get("PYTHONPATH")])])
    done = await trio.run_process(
        [*LIVECONTEXT, *args], capture_stdout=True, capture_stderr=True, check=False,
        cwd=cwd, env=env,
    )
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def json_lines(text: str) -> list[Any]:
    """Every non-blank line of ``text`` decoded as JSON."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def without_added_keys(new: Any, old: Any) -> Any:
    """``new`` without the object keys that ``old`` lacks, at any depth (fields a newer
    format adds); everything ``old`` has must still be there and equal."""
    if isinstance(new, dict) and isinstance(old, dict):
        return {k: without_added_keys(v, old[k]) for k, v in new.items() if k in old}
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [without_added_keys(n, o) for n, o in zip(new, old, strict=True)]
    return new


def write_script(path: Path, turns: Sequence[dict[str, Any]]) -> Path:
    """Write a scripted model's script and return its path."""
    path.write_text(json.dumps({"turns": list(turns)}), encoding="utf-8")
    return path


def notebook_turns(edits: int, *, delay_s: float = 0.0) -> list[dict[str, Any]]:
    """``edits`` model turns with one notebook edit each (line k appended), then an answer."""
    turns: list[dict[str, Any]] = []
    for k in range(edits):
        old, new = ("", "line 0") if k == 0 else (f"line {k - 1}", f"line {k - 1}\nline {k}")
        turns.append({"text": f"adding line {k}", "delay_s": delay_s,
                      "tool_calls": [{"name": "notebook_replace", "arguments": {"old_text": old, "new_text": new}}]})
    turns.append({"text": f"done: {edits} lines", "delay_s": delay_s})
    return turns


def url_for(backend: str, root: Path) -> str:
    """A store URL of ``backend`` under ``root`` (not created yet)."""
    return f"sqlite:{root / 'store.db'}" if backend == "sqlite" else f"jsonl:{root / 'store'}"


async def read_thread(url: str, thread: str) -> Any:
    """The state of ``thread`` in the store at ``url`` as a reader sees it now (``None``: no
    such thread yet)."""
    from livecontext.actors.history import load_state
    from livecontext.protocol.wire import make_converter
    from livecontext.runtime.persistence import ThreadNotFoundError, open_store

    async with await open_store(url) as store:
        try:
            reader = await store.open_reader(thread)
        except ThreadNotFoundError:
            return None
        async with reader:
            return await load_state(reader, make_converter(), thread)


async def run_or_kill(command: Sequence[str], root: Path, kill_when: Callable[[], Awaitable[bool]] | None, *,
                      poll_s: float = 0.02, stdin: int | None = None) -> subprocess.CompletedProcess[str] | None:
    """Run ``command`` (output to ``root/out`` and ``root/err``; ``stdin``: as for
    ``subprocess``, ``subprocess.PIPE`` for one that stays open and silent). With
    ``kill_when``, SIGKILL it once ``kill_when()`` is true and return ``None``; else wait for it
    (60 s at most) and return what it did. It never outlives the call."""
    with open(root / "out", "wb+") as out, open(root / "err", "wb+") as err:
        proc = await trio.lowlevel.open_process(list(command), stdin=stdin, stdout=out, stderr=err, env=cli_env())
        try:
            if kill_when is not None:
                with trio.fail_after(30):
                    while not await kill_when():
                        assert proc.poll() is None, (root / "err").read_text()
                        await trio.sleep(poll_s)
                proc.send_signal(signal.SIGKILL)
                await proc.wait()
                return None
            with trio.fail_after(60):
                await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                with trio.CancelScope(shield=True):
                    await proc.wait()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(list(command), proc.returncode, out.read().decode(), err.read().decode())


def in_process(*args: str, columns: int | None = 200, **env: str) -> tuple[int, str, str]:
    """Run ``livecontext ARGS`` in this process (stdout is not a terminal): exit code, stdout,
    stderr; no store from the environment, ``COLUMNS`` as given (``None``: unset) and ``env``
    besides. An error the command did not handle is raised as itself."""
    from click.testing import CliRunner

    from livecontext.actors.cli import main

    given: dict[str, str | None] = {"LIVECONTEXT_STORE": None, **env}
    if columns is not None:
        given["COLUMNS"] = str(columns)
    result = CliRunner().invoke(main, list(args), env=given)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def in_process_json(*args: str) -> Any:
    """What ``livecontext ARGS`` (run by :func:`in_process`, which must succeed) prints as JSON."""
    code, out, err = in_process(*args)
    assert code == 0, err
    return json.loads(out)
