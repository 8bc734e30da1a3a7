"""A resumed thread runs as it ran: its budget, limits, recap, analyzers, spend limits,
pin-task and lifecycle come from its log, not from the defaults; a flag that changes one is
said in one line and recorded (issue 15, point 3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import trio
from click.testing import CliRunner

from livecontext.actors.agent._session import recorded_config
from livecontext.actors.cli import main
from livecontext.protocol.records import RecordedRecap, ThreadConfigured

EXAMPLES = Path(__file__).parents[3] / "examples"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["run", *args])
    return result.exit_code, result.stdout, result.stderr


def configured(store: str, thread: str) -> ThreadConfigured:
    config = trio.run(recorded_config, store, thread)
    assert config is not None
    return config


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The offline example blueprint (budget 4000, a recap, two analyzers) in a folder of its
    own, its script given one more turn for the resumed run."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLES / "offline.toml", tmp_path / "offline.toml")
    script = json.loads((EXAMPLES / "offline_script.json").read_text(encoding="utf-8"))
    script["turns"].append({"text": "Noted."})
    (tmp_path / "offline_script.json").write_text(json.dumps(script), encoding="utf-8")
    return tmp_path / "offline.toml"


def test_a_blueprint_thread_resumed_without_flags_keeps_its_budget_recap_and_analyzers_and_says_nothing(
        offline: Path) -> None:
    store = f"sqlite:{offline.parent / 'off.db'}"
    code, _, err = run(str(offline), "--store", store)
    assert code == 0, err
    first = configured(store, "lake-trip")
    assert first.budget == 4000 and first.settings is not None
    code, _, err = run("--store", store, "--thread", "lake-trip", "--input", "x")
    assert (code, err) == (0, "")
    resumed = configured(store, "lake-trip")
    assert resumed == first  # (so no new ThreadConfigured was recorded)
    assert resumed.settings is not None
    assert resumed.settings.recap == RecordedRecap("simple_extract", 3, 1, 1200)
    assert [(a.name, a.kind, a.threshold) for a in resumed.settings.analyzers] == [
        ("failures", "repeated_failures", 2), ("usage", "usage", 3)]
    assert resumed.settings.limits is not None and resumed.settings.limits.max_entries == 8


def test_a_flag_that_changes_a_resumed_threads_setting_is_said_in_one_line_and_recorded(offline: Path) -> None:
    store = f"sqlite:{offline.parent / 'off.db'}"
    assert run(str(offline), "--store", store)[0] == 0
    code, _, err = run("--store", store, "--thread", "lake-trip", "--input", "x", "--budget", "8000")
    assert (code, err) == (0, "livecontext: note: thread lake-trip: budget 4000 -> 8000 (--budget)\n")
    resumed = configured(store, "lake-trip")
    assert resumed.budget == 8000
    assert resumed.settings is not None and resumed.settings.recap is not None  # (the rest kept)


def test_a_flag_given_equal_to_the_recorded_setting_is_not_said(offline: Path) -> None:
    store = f"sqlite:{offline.parent / 'off.db'}"
    assert run(str(offline), "--store", store)[0] == 0
    code, _, err = run("--store", store, "--thread", "lake-trip", "--input", "x", "--budget", "4000")
    assert (code, err) == (0, "")


def test_a_thread_run_without_lifecycle_and_a_spend_limit_resumes_so_and_a_spend_flag_changes_only_its_limit(
        tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'lc.db'}"
    assert run("--store", store, "--input", "a", "--no-lifecycle", "--budget", "3000",
               "--max-output-tokens", "500")[0] == 0
    assert run("--store", store, "--input", "b")[::2] == (0, "")
    resumed = configured(store, "main")
    assert resumed.budget == 3000 and resumed.settings is not None
    assert resumed.settings.lifecycle is False and "task_complete" not in [t.name for t in resumed.tools]
    assert resumed.settings.spend is not None and resumed.settings.spend.max_output_tokens == 500
    code, _, err = run("--store", store, "--input", "c", "--max-input-tokens", "90000")
    assert code == 0 and err == ("livecontext: note: thread main: spend max_output_tokens=500 -> "
                                 "max_input_tokens=90000 max_output_tokens=500 (--max-input-tokens)\n")
    spend = configured(store, "main").settings
    assert spend is not None and spend.spend is not None
    assert (spend.spend.max_input_tokens, spend.spend.max_output_tokens) == (90000, 500)
