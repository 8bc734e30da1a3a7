"""Recorded runs to trace: the offline blueprint, the team of three, and a thread where a
reader tries an edit it may not make, an editor makes one, and a step fails."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import trio
from click.testing import CliRunner

from livecontext.actors import AgentSettings, spawn_agent
from livecontext.actors.cli import main
from livecontext.actors.trace import Trace, build_trace
from livecontext.protocol.agent import Cancel, Idle, IdleReason, ProvideInput, RunUntilIdle
from livecontext.protocol.context import (
    AccessDenied,
    Capability,
    EditApplied,
    EditHistory,
    EntryRef,
    HistorySlice,
    ReadHistory,
    ReplaceContent,
)
from livecontext.protocol.history import Level
from livecontext.protocol.wire import make_converter
from livecontext.runtime import open_runtime
from livecontext.runtime.models import ScriptedModel
from livecontext.runtime.persistence import open_store
from livecontext.runtime.tokens import TokenCounter

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
COUNTER = TokenCounter()
"""Shared: loading the tokenizer takes longer than a run."""


def cli(*args: str) -> tuple[int, str, str]:
    """Run ``livecontext ARGS`` in-process: exit code, stdout, stderr."""
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def run_blueprint(name: str, store: str) -> None:
    """Run ``examples/NAME`` into ``store``."""
    code, _, err = cli("run", str(EXAMPLES / name), "--store", store)
    assert code == 0, err


def trace(store: str, thread: str | None, **options: Any) -> Trace:
    """:func:`build_trace`, from synchronous code."""
    async def go() -> Trace:
        return await build_trace(store, thread, counter=COUNTER, **options)
    return trio.run(go)


def audit(store: str, thread: str) -> list[dict[str, Any]]:
    """The thread's records as ``audit`` prints them."""
    code, out, err = cli("audit", "--store", store, "--thread", thread, "--json")
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


REFUSED_TURNS = [
    {"text": "Noting the milk.", "tool_calls": [
        {"name": "notebook_replace", "arguments": {"old_text": "", "new_text": "- milk"}}]},
    {"text": "Noted: milk."},
    {"text": "Eggs too.", "fail": {"error": "server", "times": 1}, "delay_s": 60},
]
"""The third turn fails once (the step fails), then takes a minute (it is cancelled: a pause)."""


async def refused_edit_run(store_url: str) -> dict[str, Any]:
    """Thread ``t``: one input answered with a notebook edit and a reply; then ``client/reader``
    (read only) tries to edit the first entry and is refused, ``client/editor`` edits it, a
    second input's model call fails, and the next is cancelled (the engine pauses). Returns
    the replies the two clients got."""
    store = await open_store(store_url)
    async with store, await store.open_thread("t", create=True, owner="test") as log:
        async with open_runtime() as rt:
            agent = await spawn_agent(rt, log, ScriptedModel.from_turns(REFUSED_TURNS), AgentSettings("t", budget=3000),
                                      converter=make_converter(), counter=COUNTER, inputs=["Note that we need milk."])
            driver = rt.client("test")
            await driver.ask(agent.engine, RunUntilIdle(), timeout=30)
            reader = rt.client("reader", capabilities={Capability.READ})
            view = await reader.ask(agent.history, ReadHistory())
            assert isinstance(view, HistorySlice)
            first = EntryRef(view.entries[0].id, view.entries[0].revision)
            denied = await reader.ask(agent.history, EditHistory((ReplaceContent(first, Level.GIST, "mine"),)))
            assert isinstance(denied, AccessDenied)
            editor = rt.client("editor", capabilities={Capability.READ, Capability.EDIT})
            applied = await editor.ask(agent.history, EditHistory((ReplaceContent(first, Level.GIST, "milk, edited"),)))
            assert isinstance(applied, EditApplied)
            await driver.ask(agent.input, ProvideInput("And eggs?"))
            failed = await driver.ask(agent.engine, RunUntilIdle(), timeout=30)
            assert isinstance(failed, Idle) and failed.reason is IdleReason.FAILED
            async with trio.open_nursery() as nursery:
                nursery.start_soon(functools.partial(driver.ask, agent.engine, RunUntilIdle(), timeout=30))
                await trio.sleep(0.2)  # (the call waits out its delay)
                await driver.ask(agent.engine, Cancel(), timeout=10)
            await rt.aclose()
    return {"denied": denied, "applied": applied}
