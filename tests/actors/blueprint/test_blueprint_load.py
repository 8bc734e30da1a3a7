"""Loading blueprints: the examples, every key reaching the settings, defaults, paths, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from livecontext.actors import AgentSettings
from livecontext.actors.analyzers import AnalyzerSettings
from livecontext.actors.apps import Notebook
from livecontext.actors.blueprint import (
    AppUse,
    BlueprintModels,
    load_blueprint,
    open_blueprint_models,
)
from livecontext.actors.history import HistoryLimits
from livecontext.actors.recap import RecapSettings
from livecontext.runtime import UsageError

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

FULL = '''\
thread = "exp-1"
system_prompt = "Be terse."
model = "openai:gpt-4o-mini"
budget = 3210
snapshot_every = 77
store = "jsonl:runs/store"
inputs = ["first", "second"]
max_steps = 12

[apps]
notebook = false

[limits]
max_entries = 30
max_tokens = 4000
max_bytes = 90000
soft = 0.5
hard = 0.7
truncate = 0.9

[recap]
strategy = "model_summary"
window = 5
batch = 3
max_summary_chars = 1500
budget = 1800
max_retries = 4
model = "scripted:scripts/recap.json"

[[analyzers]]
name = "critic"
kind = "model"
trigger = "period"
period_s = 2.5
model = "echo"
prompt = "Look for loops."
window = 20
capabilities = ["read", "notify", "edit"]

[[analyzers]]
name = "fails"
kind = "repeated_failures"
threshold = 4
window = 6
capabilities = ["read"]
'''


def write(tmp_path: Path, text: str, name: str = "bp.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


async def test_the_offline_example_has_a_scripted_model_a_notebook_limits_a_recap_and_two_analyzers() -> None:
    bp = load_blueprint(EXAMPLES / "offline.toml")
    assert bp.model == f"scripted:{EXAMPLES / 'offline_script.json'}"
    assert bp.apps == (AppUse("notebook"),) and bp.tools == ()
    assert bp.settings.limits.max_entries is not None and bp.settings.limits.max_entries < 18
    assert bp.settings.recap is not None and bp.settings.recap.strategy == "simple_extract"
    assert [(a.name, a.kind) for a in bp.settings.analyzers] == [
        ("failures", "repeated_failures"), ("usage", "usage")]
    assert len(bp.inputs) == 3
    assert bp.recap_model is None and dict(bp.analyzer_models) == {}


async def test_the_openai_example_names_a_model_for_the_agent_the_recap_and_its_model_analyzer() -> None:
    bp = load_blueprint(EXAMPLES / "openai.toml")
    assert bp.model == "openai:gpt-4o-mini"
    assert bp.settings.recap is not None and bp.settings.recap.strategy == "model_summary"
    assert bp.recap_model == "openai:gpt-4o-mini"
    assert dict(bp.analyzer_models) == {"reviewer": "openai:gpt-4o-mini"}
    (reviewer,) = [a for a in bp.settings.analyzers if a.kind == "model"]
    assert "travel planner" in reviewer.prompt


async def test_every_key_of_a_blueprint_reaches_the_settings(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "recap.json").write_text('{"turns": []}', encoding="utf-8")
    bp = load_blueprint(write(tmp_path, FULL))
    assert bp.settings == AgentSettings(
        thread_id="exp-1",
        system_prompt="Be terse.",
        budget=3210,
        snapshot_every=77,
        limits=HistoryLimits(max_entries=30, max_tokens=4000, max_bytes=90000, soft=0.5, hard=0.7, truncate=0.9),
        recap=RecapSettings(strategy="model_summary", window=5, batch=3, max_summary_chars=1500,
                            budget=1800, max_retries=4),
        analyzers=(
            AnalyzerSettings(name="critic", kind="model", trigger="period", period_s=2.5,
                             prompt="Look for loops.", window=20, capabilities=("read", "notify", "edit")),
            AnalyzerSettings(name="fails", kind="repeated_failures", threshold=4, window=6,
                             capabilities=("read",)),
        ),
    )
    assert bp.model == "openai:gpt-4o-mini"
    assert bp.recap_model == f"scripted:{tmp_path / 'scripts' / 'recap.json'}"
    assert dict(bp.analyzer_models) == {"critic": "echo"}
    assert bp.store == f"jsonl:{tmp_path / 'runs' / 'store'}"
    assert bp.inputs == ("first", "second")
    assert bp.max_steps == 12
    assert bp.apps == () and bp.make_apps() == []


async def test_an_empty_blueprint_gets_the_same_defaults_as_code_that_passes_nothing(tmp_path: Path) -> None:
    bp = load_blueprint(write(tmp_path, "# nothing here\n"))
    assert bp.settings == AgentSettings()
    assert (bp.model, bp.recap_model, bp.store, bp.inputs, bp.max_steps) == ("echo", None, None, (), None)
    assert bp.apps == (AppUse("notebook"),) and bp.tools == ()
    assert [type(app) for app in bp.make_apps()] == [Notebook]


async def test_a_recap_table_with_no_keys_turns_the_recap_on_with_its_defaults(tmp_path: Path) -> None:
    assert load_blueprint(write(tmp_path, "[recap]\n")).settings.recap == RecapSettings()


async def test_paths_in_a_blueprint_are_taken_from_its_folder_not_the_current_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "s.json").write_text('{"turns": []}', encoding="utf-8")
    write(folder, 'model = "scripted:s.json"\nstore = "sqlite:data/x.db"\n')
    monkeypatch.chdir(tmp_path)
    bp = load_blueprint("exp/bp.toml")
    assert bp.model == f"scripted:{folder / 's.json'}"
    assert bp.store == f"sqlite:{folder / 'data' / 'x.db'}"
    assert bp.path == "exp/bp.toml"


async def test_a_cassette_and_the_script_it_wraps_are_taken_from_the_blueprints_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "s.json").write_text('{"turns": []}', encoding="utf-8")
    write(folder, 'model = "cassette:cassettes/run.json:scripted:s.json"\n')
    monkeypatch.chdir(tmp_path)
    assert load_blueprint("exp/bp.toml").model == f"cassette:{folder / 'cassettes' / 'run.json'}:scripted:{folder / 's.json'}"


async def test_memory_and_absolute_stores_are_kept_as_they_are(tmp_path: Path) -> None:
    assert load_blueprint(write(tmp_path, 'store = "memory:"\n')).store == "memory:"
    assert load_blueprint(write(tmp_path, 'store = "sqlite:///var/x.db"\n')).store == "sqlite:/var/x.db"


async def test_override_replaces_only_the_values_given(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "recap.json").write_text('{"turns": []}', encoding="utf-8")
    bp = load_blueprint(write(tmp_path, FULL))
    same = bp.override()
    assert same == bp
    new = bp.override(model="echo", store="memory:", thread="t2", inputs=["only"], system_prompt="Hi",
                      budget=99, max_steps=3)
    assert (new.model, new.store, new.inputs, new.max_steps) == ("echo", "memory:", ("only",), 3)
    assert (new.settings.thread_id, new.settings.system_prompt, new.settings.budget) == ("t2", "Hi", 99)
    assert new.settings.recap == bp.settings.recap and new.settings.analyzers == bp.settings.analyzers
    assert new.recap_model == bp.recap_model


async def test_override_checks_what_it_is_given(tmp_path: Path) -> None:
    bp = load_blueprint(write(tmp_path, ""))
    with pytest.raises(UsageError, match=r"^invalid thread id 'a b'"):
        bp.override(thread="a b")
    with pytest.raises(UsageError, match=r"^budget must be >= 1, got 0$"):
        bp.override(budget=0)


async def test_open_blueprint_models_opens_a_client_for_the_recap_and_each_model_analyzer() -> None:
    bp = load_blueprint(EXAMPLES / "openai.toml")
    async with open_blueprint_models(bp, base_url="http://127.0.0.1:9/v1", api_key="test") as models:
        assert models.recap is not None
        assert set(models.analyzers) == {"reviewer"}
        assert models.analyzers["reviewer"] is not models.recap


async def test_open_blueprint_models_opens_nothing_without_a_blueprint_or_side_models() -> None:
    async with open_blueprint_models(None) as models:
        assert models == BlueprintModels()
    async with open_blueprint_models(load_blueprint(EXAMPLES / "offline.toml")) as models:
        assert models.recap is None and dict(models.analyzers) == {}
