"""Helpers for the durability tests: the real ``livecontext`` command, scripts and stores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
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
