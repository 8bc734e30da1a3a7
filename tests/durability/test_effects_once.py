"""A side-effecting tool killed at random instants is done exactly once or reported unknown, never twice.

A real ``livecontext run`` subprocess runs a scripted agent that calls one payment tool
(tests/support/effect_tools.py). The tool writes its points to an effect log (``before``, the
effect itself, ``after``); each seed picks one of those instants and whether the tool offers a
``check(key)``, and the process is SIGKILLed once the log shows it reached that instant. The
same command is then run again to the end.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from livecontext import idempotency_key

from tests.support.command import LIVECONTEXT, read_thread, run_cli, run_or_kill, write_script
from tests.support.effect_tools import POINTS, effects_of

SEEDS = range(20)
CALL_ID = "call_0_0"
"""The scripted model's id for its first call (turn 0, position 0)."""


def command(tool: str, script: Path, store: str, *given: str, thread: str = "t") -> list[str]:
    return [*LIVECONTEXT, "run", "--model", f"scripted:{script}", "--store", store, "--thread", thread,
            *given, "--json", "--tool", f"tests.support.effect_tools:{tool}"]


@pytest.mark.parametrize("seed", SEEDS)
async def test_a_side_effecting_tool_killed_at_a_random_instant_pays_once_or_is_reported_unknown(
        tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    tool, instant = rng.choice(["pay", "pay_checked"]), rng.choice(POINTS)
    log = tmp_path / "effects"
    script = write_script(tmp_path / "script.json", [
        {"text": "paying", "tool_calls": [{"name": tool, "arguments": {"amount": 5}}]}, {"text": "done"}])
    store = f"sqlite:{tmp_path / 'db'}"
    key = idempotency_key("t", "e2", CALL_ID)
    monkeypatch.setenv("EFFECT_LOG", str(log))
    monkeypatch.setenv("EFFECT_HOLD", instant)

    async def reached() -> bool:
        return log.exists() and f"{instant} {key}" in log.read_text(encoding="utf-8").splitlines()

    assert await run_or_kill(command(tool, script, store, "--input", "pay 5"), tmp_path, reached) is None
    monkeypatch.delenv("EFFECT_HOLD")
    done = await run_or_kill(command(tool, script, store), tmp_path, None)  # resumed: no new input
    assert done is not None and done.returncode == 0, done.stderr if done else ""
    results = [r for e in json.loads(done.stdout)["entries"] for r in e.get("results", ())]
    assert [r["call_id"] for r in results] == [CALL_ID]
    result, paid = results[0], effects_of(log, key)
    where = f"seed {seed}: {tool} killed after {instant!r}"
    assert paid <= 1, f"{where}: paid {paid} times"
    if tool == "pay_checked":  # the check resolves it: paid exactly once, the model told so
        assert paid == 1, where
        assert result["status"] == "ok", where
        expected = "paid 5" if instant == "before" else "paid (its check found the payment)"
        assert result["content"] == expected, where
    else:  # no check: not run again, the model told the outcome is unknown, with the key
        assert paid == (instant != "before"), where
        assert result["status"] == "interrupted", where
        assert "outcome unknown" in result["content"] and key in result["content"], where


async def test_a_fork_keeps_its_sources_keys_for_the_calls_made_before_the_fork_point(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "effects"
    pay = {"name": "pay", "arguments": {"amount": 5}}
    script = write_script(tmp_path / "script.json", [
        {"text": "paying", "tool_calls": [pay]}, {"text": "again", "tool_calls": [pay]}, {"text": "done"}])
    store = f"sqlite:{tmp_path / 'db'}"
    source_key = idempotency_key("t", "e2", CALL_ID)
    monkeypatch.setenv("EFFECT_LOG", str(log))
    monkeypatch.setenv("EFFECT_HOLD", "effect")

    async def paid() -> bool:
        return effects_of(log, source_key) == 1

    assert await run_or_kill(command("pay", script, store, "--input", "pay 5"), tmp_path, paid) is None
    monkeypatch.delenv("EFFECT_HOLD")
    source = await read_thread(store, "t")
    forked = await run_cli("fork", "--store", store, "--thread", "t", "--at", str(source.seq), "--new-thread", "f")
    assert forked.returncode == 0, forked.stderr
    done = await run_or_kill(command("pay", script, store, thread="f"), tmp_path, None)
    assert done is not None and done.returncode == 0, done.stderr
    first, second = [r for e in json.loads(done.stdout)["entries"] for r in e.get("results", ())]
    # the call made in t before the fork point: the fork reports it with t's key, not its own
    assert first["status"] == "interrupted" and source_key in first["content"]
    assert idempotency_key("f", "e2", CALL_ID) not in first["content"]
    # the call made in the fork after it: the fork's own key
    assert second["content"] == "paid 5"
    assert effects_of(log, idempotency_key("f", "e4", "call_1_0")) == 1
    assert effects_of(log, source_key) == 1
