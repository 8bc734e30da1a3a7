"""Spend limits through the command line: ``run --max-input-tokens/--max-output-tokens/--max-cost``
and a blueprint's ``[spend]``; the stop is in ``run --json`` and, after the process, ``state``.

Each test first runs the script with no limit to learn each call's figures from its log, then
sets a limit between two of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
from click.testing import CliRunner

from livecontext.actors.cli import main
from livecontext.actors.history import load_state
from livecontext.protocol.history import ModelOutputEntry
from livecontext.protocol.wire import make_converter
from livecontext.runtime.persistence import open_store

NOTE = {"name": "notebook_replace", "arguments": {"old_text": "", "new_text": "- milk"}}
NOTE_MORE = {"name": "notebook_replace", "arguments": {"old_text": "- milk", "new_text": "- milk\n- eggs"}}
SCRIPT = {"turns": [{"text": "noting milk", "tool_calls": [NOTE]},
                    {"text": "noting eggs", "tool_calls": [NOTE_MORE]},
                    {"text": "both noted"}]}
"""Three model calls in one run: two tool calls, then the answer."""
TASK = "buy milk and eggs"


def livecontext(*args: str) -> tuple[int, str, str]:
    """Run ``livecontext ARGS`` in this process: exit code, stdout, stderr."""
    result = CliRunner().invoke(main, list(args), env={"LIVECONTEXT_STORE": None, "COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def as_json(ran: tuple[int, str, str]) -> dict[str, Any]:
    code, out, err = ran
    assert code == 0, err
    data = json.loads(out)
    assert isinstance(data, dict)
    return data


def outputs(store: str, thread: str = "main") -> list[ModelOutputEntry]:
    """The thread's model outputs, read from its log."""
    async def read() -> list[ModelOutputEntry]:
        async with await open_store(store) as opened, await opened.open_reader(thread) as reader:
            state = await load_state(reader, make_converter(), thread)
        return [e for e in state.entries if isinstance(e, ModelOutputEntry)]
    return trio.run(read)


def script(tmp: Path) -> str:
    path = tmp / "script.json"
    path.write_text(json.dumps(SCRIPT))
    return f"scripted:{path}"


def calls(tmp: Path) -> list[ModelOutputEntry]:
    """Each call of a run of the script with no limit."""
    store = f"sqlite:{tmp / 'unlimited.db'}"
    as_json(livecontext("run", "--store", store, "--model", script(tmp), "--input", TASK, "--json"))
    return outputs(store)


def test_max_input_tokens_stops_the_run_paused_with_the_reason_in_state_and_a_raised_limit_resumes(
        tmp_path: Path) -> None:
    first, second, third = (c.usage.prompt_tokens for c in calls(tmp_path))
    store = f"sqlite:{tmp_path / 'spend.db'}"
    run = ["run", "--store", store, "--model", script(tmp_path), "--json"]
    limit = first + second
    stopped = as_json(livecontext(*run, "--input", TASK, "--max-input-tokens", str(limit)))
    reason = (f"spend limit: max_input_tokens {limit} of agent main would be passed: spent {first + second}, "
              f"this call {third}; raise it with --max-input-tokens ([spend] max_input_tokens) and run again")
    assert (stopped["state"], stopped["status"], stopped["reason"]) == ("PendingToolResults", "paused", reason)
    assert len(outputs(store)) == 2

    state = as_json(livecontext("state", "--store", store, "--thread", "main", "--json"))  # after the process ended
    assert (state["status"], state["reason"]) == ("paused", reason)

    again = as_json(livecontext(*run, "--max-input-tokens", str(limit)))
    assert (again["status"], again["reason"]) == ("paused", reason)
    assert len(outputs(store)) == 2  # stopped again at once: no model call
    code, audit, _ = livecontext("audit", "--store", store, "--thread", "main", "--json")
    assert code == 0
    assert [json.loads(line)["kind"] for line in audit.splitlines()].count("EnginePaused") == 1

    resumed = as_json(livecontext(*run, "--max-input-tokens", str(limit + third)))
    assert (resumed["state"], resumed["status"]) == ("WaitingInput", "waiting_user")
    assert "reason" not in resumed
    assert [e.content.live.text for e in outputs(store)] == ["noting milk", "noting eggs", "both noted"]


def test_max_output_tokens_stops_once_the_output_reaches_it_and_the_transcript_says_why(tmp_path: Path) -> None:
    found = calls(tmp_path)
    spent = found[0].usage.completion_tokens + found[1].usage.completion_tokens
    store = f"sqlite:{tmp_path / 'spend.db'}"
    code, out, err = livecontext("run", "--store", store, "--model", script(tmp_path), "--input", TASK,
                                 "--max-output-tokens", str(spent))
    assert code == 0, err
    said = " ".join((out + err).split())
    assert (f"thread main is PendingToolResults after 7 steps (paused: spend limit: max_output_tokens {spent} of "
            f"agent main is reached: spent {spent}; raise it with --max-output-tokens ([spend] max_output_tokens) "
            "and run again)") in said
    assert len(outputs(store)) == 2


def _blueprint(tmp: Path, spend: str) -> Path:
    path = tmp / "agent.toml"
    path.write_text(f'model = "{script(tmp)}"\ninputs = ["{TASK}"]\n\n{spend}')
    return path


def test_a_blueprints_max_cost_prices_with_its_own_table_and_the_flag_raises_it(tmp_path: Path) -> None:
    found = calls(tmp_path)
    cost = [(c.usage.prompt_tokens * 1000 + c.usage.completion_tokens * 2000) / 1e6 for c in found]
    third = found[2]  # (its shared prefix is priced as cached input)
    estimate = ((third.usage.prompt_tokens - third.shared_tokens) * 1000 + third.shared_tokens * 100) / 1e6
    limit = round(cost[0] + cost[1] + estimate / 2, 6)
    bp = _blueprint(tmp_path, f'[spend]\nmax_cost = {limit}\n\n[spend.prices."scripted"]\n'
                              "input = 1000\ncached_input = 100\noutput = 2000\n")
    store = f"sqlite:{tmp_path / 'spend.db'}"
    stopped = as_json(livecontext("run", str(bp), "--store", store, "--json"))
    assert stopped["status"] == "paused"
    assert stopped["reason"].startswith(f"spend limit: max_cost {limit:g} of agent main would be passed: "
                                        f"spent {cost[0] + cost[1]:.4f}, this call ")
    assert len(outputs(store)) == 2

    resumed = as_json(livecontext("run", str(bp), "--store", store, "--json", "--max-cost", str(limit * 2)))
    assert resumed["status"] == "waiting_user"
    assert len(outputs(store)) == 3


def test_a_blueprints_max_cost_for_a_model_with_no_price_is_refused_on_its_line(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('model = "openai:my-own-model"\n\n[spend]\nmax_cost = 1.0\n')
    code, _, err = livecontext("run", str(path), "--store", f"sqlite:{tmp_path / 'never.db'}")
    assert code == 1
    assert err.strip() == (
        f"livecontext: error: {path}:1: model 'openai:my-own-model': [spend] max_cost needs the price of model "
        "'openai:my-own-model', and none is known: add it to the blueprint ([spend.prices.\"my-own-model\"] "
        "input = ..., cached_input = ..., output = ..., in money per million tokens) or to "
        "SpendLimits(prices={\"my-own-model\": Price(input, cached_input, output)}), or limit tokens "
        "(max_input_tokens, max_output_tokens) instead")
    assert not (tmp_path / "never.db").exists()


def test_a_max_cost_flag_for_a_model_with_no_price_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    code, _, err = livecontext("run", "--store", f"sqlite:{tmp_path / 'never.db'}", "--model", "openai:my-own-model",
                               "--api-key", "unused", "--input", "x", "--max-cost", "0.5")
    assert code == 1
    assert err.startswith("livecontext: error: max_cost needs the price of model 'openai:my-own-model'")
    assert not (tmp_path / "never.db").exists()


def test_a_spend_flag_that_is_not_above_zero_is_refused() -> None:
    code, _, err = livecontext("run", "--store", "memory:", "--input", "x", "--max-cost", "0")
    assert code == 2
    assert "Invalid value for '--max-cost': 0.0 is not in the range x>0." in " ".join(err.split())


def test_a_systems_limit_covers_all_its_agents_and_run_raises_it(tmp_path: Path) -> None:
    bp = tmp_path / "team.toml"
    bp.write_text('system = "team"\n\n[[agents]]\nname = "a"\ninputs = ["hello"]\n\n'
                  '[[agents]]\nname = "b"\ninputs = ["hello"]\n')
    unlimited = f"sqlite:{tmp_path / 'unlimited.db'}"
    as_json(livecontext("run", str(bp), "--store", unlimited, "--json"))
    a_in, b_in = (outputs(unlimited, f"team.{name}")[0].usage.prompt_tokens for name in ("a", "b"))
    limit = a_in + b_in - 1  # room for either agent's call, not for both
    assert limit >= max(a_in, b_in)
    store = f"sqlite:{tmp_path / 'spend.db'}"
    stopped = as_json(livecontext("run", str(bp), "--store", store, "--json", "--max-input-tokens", str(limit)))
    rows = sorted((agent["status"], agent.get("reason", "")) for agent in stopped["agents"])
    # the two run at once: whichever asked second is the one stopped
    assert [status for status, _ in rows] == ["paused", "waiting_user"]
    assert rows[0][1].startswith(f"spend limit: max_input_tokens {limit} of system team would be passed: spent ")
    assert sum(len(outputs(store, f"team.{name}")) for name in ("a", "b")) == 1

    # raised: the stopped agent makes its call, then both take this run's inputs
    resumed = as_json(livecontext("run", str(bp), "--store", store, "--json", "--max-input-tokens", str(10 * limit)))
    assert [agent["status"] for agent in resumed["agents"]] == ["waiting_user", "waiting_user"]
    assert [len(outputs(store, f"team.{name}")) for name in ("a", "b")] == [2, 2]
