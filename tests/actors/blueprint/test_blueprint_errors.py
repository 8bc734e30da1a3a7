"""Every problem in a blueprint is one BlueprintError naming the file, the line and the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from livecontext.actors.blueprint import Blueprint, BlueprintError, load_blueprint
from livecontext.runtime import UsageError


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


def load(text: str) -> Blueprint:
    Path("bp.toml").write_text(text, encoding="utf-8")
    return load_blueprint("bp.toml")


async def test_an_unknown_key_in_a_table_names_the_key_the_table_the_line_and_the_known_keys() -> None:
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:4: unknown key 'budjet' in [limits]; known keys: "
            "max_entries, max_tokens, max_bytes, soft, hard, truncate")) as info:
        load('model = "echo"\n\n[limits]\nbudjet = 3\n')
    assert (info.value.path, info.value.line, info.value.key) == ("bp.toml", 4, "limits.budjet")


async def test_an_unknown_top_level_key_suggests_the_nearest_known_one() -> None:
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:2: unknown key 'budjet' at the top level (did you mean 'budget'?); known keys: "
            "system_prompt, model, budget, snapshot_every, inputs, pins, pin_task, lifecycle, max_steps, "
            "[[apps]], [[tools]], [[mcp]], [limits], [context], [recap], [[analyzers]], approval, approval_policy, thread, store, "
            "system, ask_timeout_s, "
            "[spend], [[agents]]")):
        load('thread = "t"\nbudjet = 100\n')


async def test_an_unknown_table_is_reported_on_its_header_line() -> None:
    with pytest.raises(BlueprintError, match=r"^bp\.toml:3: unknown key 'recaps' at the top level \(did you mean 'recap'\?\)"):
        load('thread = "t"\n\n[recaps]\nwindow = 2\n')


async def test_a_value_outside_its_choices_names_the_table_the_key_and_the_choices() -> None:
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:3: [recap] strategy must be one of simple_extract, model_summary, structured, got 'fancy'")) as info:
        load('[recap]\nwindow = 2\nstrategy = "fancy"\n')
    assert info.value.key == "recap.strategy"


async def test_a_value_of_the_wrong_type_is_not_coerced() -> None:
    with pytest.raises(BlueprintError, match=exactly("bp.toml:1: budget must be an integer, got a string '8000'")):
        load('budget = "8000"\n')
    with pytest.raises(BlueprintError, match=exactly("bp.toml:2: [apps] notebook must be true or false, got an integer 1")):
        load('[apps]\nnotebook = 1\n')


async def test_a_value_below_its_minimum_says_the_bound() -> None:
    with pytest.raises(BlueprintError, match=exactly("bp.toml:3: [limits] max_entries must be >= 1, got 0")):
        load('\n[limits]\nmax_entries = 0\n')
    with pytest.raises(BlueprintError, match=exactly("bp.toml:2: [limits] soft must be > 0.0, got 0.0")):
        load('[limits]\nsoft = 0.0\n')


async def test_a_bad_item_of_a_list_is_named_by_its_index() -> None:
    with pytest.raises(BlueprintError, match=exactly("bp.toml:1: inputs[1] must be a string, got an integer 5")) as info:
        load('inputs = ["a", 5]\n')
    assert info.value.key == "inputs[1]"


async def test_an_error_in_the_second_analyzer_points_at_its_own_lines() -> None:
    text = ('[[analyzers]]\nname = "a"\nkind = "usage"\n\n'
            '[[analyzers]]\nname = "b"\nkind = "usual"\n')
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:7: [[analyzers]] #2 kind must be one of repeated_failures, model, usage, got 'usual'")) as info:
        load(text)
    assert info.value.key == "analyzers[1].kind"


async def test_an_unknown_capability_lists_the_known_ones() -> None:
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:3: [[analyzers]] #1 capabilities may list only append, read, edit, fold, notify; got 'delete'")):
        load('[[analyzers]]\nname = "a"\ncapabilities = ["read", "delete"]\n')


async def test_a_missing_required_key_points_at_its_table_header() -> None:
    with pytest.raises(BlueprintError, match=exactly("bp.toml:3: [[analyzers]] #1 needs a name (it is required)")):
        load('thread = "t"\n\n[[analyzers]]\nkind = "usage"\n')


async def test_a_key_inside_a_multi_line_string_does_not_move_the_reported_line() -> None:
    text = 'system_prompt = """\nstrategy = "fancy"\n"""\n[recap]\nstrategy = "fancy"\n'
    with pytest.raises(BlueprintError, match=r"^bp\.toml:5: \[recap\] strategy must be one of"):
        load(text)


async def test_the_problem_nearest_the_top_of_the_file_is_reported_first() -> None:
    with pytest.raises(BlueprintError, match=r"^bp\.toml:1: budget must be >= 1, got 0$"):
        load('budget = 0\n[limits]\nsoft = "x"\n')


async def test_thresholds_out_of_order_blame_the_later_one() -> None:
    with pytest.raises(BlueprintError, match=exactly("bp.toml:4: [limits] hard must be >= soft (0.9), got 0.5")):
        load('[limits]\nmax_entries = 9\nsoft = 0.9\nhard = 0.5\n')


async def test_limits_without_a_maximum_and_without_a_recap_are_refused_as_doing_nothing() -> None:
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:2: [limits] sets no max_entries, max_tokens or max_bytes, so its thresholds would "
            "apply to nothing; add one, or add [recap] to derive max_tokens from the budget")):
        load('budget = 4000\n[limits]\nsoft = 0.5\n')


async def test_a_recap_without_limits_gets_limits_derived_from_the_budget() -> None:
    from livecontext.actors.history import BudgetLimits

    bp = load('budget = 4000\n[recap]\nmax_summary_chars = 1200\n')
    assert bp.settings.limits is None
    # the stable policy compacts to 0.35 of the budget: what the recap leaves unfolded must fit there
    # (from half the budget: folding more often would bloat the log with the recap's rewrites)
    assert bp.settings.history_limits() == BudgetLimits(2000, 1200 // 3 + 12)
    bp = load('budget = 4000\n[context]\npolicy = "fill"\n[recap]\nmax_summary_chars = 1200\n')
    assert bp.settings.history_limits() == BudgetLimits(4000, 1200 // 3 + 12)  # fill renders the whole budget
    bp = load('budget = 4000\n[context]\nlow_water = 0.6\n[limits]\nsoft = 0.5\nhard = 0.7\n[recap]\n')
    assert bp.settings.history_limits() == BudgetLimits(2400, 2000 // 3 + 12, 0.5, 0.7, 1.0)
    given = load('budget = 4000\n[limits]\nmax_entries = 40\n[recap]\n').settings
    assert given.history_limits() == given.limits


async def test_a_model_summary_recap_needs_a_model_and_other_strategies_refuse_one() -> None:
    with pytest.raises(BlueprintError, match=exactly(
            'bp.toml:2: [recap] strategy model_summary needs a model: add model = "openai:MODEL" '
            "(or another spec) to [recap]")):
        load('[recap]\nstrategy = "model_summary"\n')
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:2: [recap] model is only used by strategy model_summary (strategy is 'simple_extract'); "
            "remove it or change the strategy")):
        load('[recap]\nmodel = "echo"\n')


async def test_a_model_analyzer_needs_a_model_and_a_prompt() -> None:
    with pytest.raises(BlueprintError, match=exactly(
            'bp.toml:3: [[analyzers]] #1 kind model needs a model: add model = "openai:MODEL" (or another spec)')):
        load('[[analyzers]]\nname = "a"\nkind = "model"\nprompt = "p"\n')
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:3: [[analyzers]] #1 kind model needs a prompt: what should it look for?")):
        load('[[analyzers]]\nname = "a"\nkind = "model"\nmodel = "echo"\n')


async def test_a_key_that_its_analyzer_would_ignore_is_an_error() -> None:
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:4: [[analyzers]] #1 threshold is not used by kind 'usage'; remove it or change the kind")):
        load('[[analyzers]]\nname = "a"\nkind = "usage"\nthreshold = 3\n')
    with pytest.raises(BlueprintError, match=exactly(
            'bp.toml:3: [[analyzers]] #1 period_s is only used with trigger "period"; remove it or change the trigger')):
        load('[[analyzers]]\nname = "a"\nperiod_s = 3\n')


async def test_two_analyzers_may_not_share_a_name() -> None:
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:4: [[analyzers]] #2 name 'a' is used twice; give each analyzer its own name")):
        load('[[analyzers]]\nname = "a"\n[[analyzers]]\nname = "a"\n')


async def test_a_bad_model_spec_lists_the_accepted_forms() -> None:
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:1: model must be one of echo, scripted:PATH, openai:MODEL, got 'gpt-4o'")):
        load('model = "gpt-4o"\n')


async def test_a_missing_script_is_reported_where_it_is_named(tmp_path: Path) -> None:
    with pytest.raises(BlueprintError, match=exactly(
            f"bp.toml:2: [recap] model names no script file: {tmp_path / 'nope.json'} "
            "(scripted: paths are taken from the blueprint's folder)")):
        load('[recap]\nmodel = "scripted:nope.json"\nstrategy = "model_summary"\n')


async def test_a_cassette_is_checked_as_the_model_it_wraps(tmp_path: Path) -> None:
    with pytest.raises(BlueprintError, match=exactly(
            f"bp.toml:1: model names no script file: {tmp_path / 'nope.json'} "
            "(scripted: paths are taken from the blueprint's folder)")):
        load('model = "cassette:c.json:scripted:nope.json"\n')
    with pytest.raises(BlueprintError, match="bp.toml:1: model: model spec 'cassette:c.json' is not cassette:PATH:SPEC"):
        load('model = "cassette:c.json"\n')


async def test_a_bad_store_url_or_thread_id_is_reported_on_its_line() -> None:
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:2: store must be a URL: sqlite:PATH, jsonl:DIR, memory: or postgresql://USER@HOST:PORT/DB, "
            "got 'mysql://x'")):
        load('thread = "t"\nstore = "mysql://x"\n')
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:1: thread 'my thread': use 1-128 letters, digits and _ . : @ + - for an agent's thread, "
            "optionally after one NAMESPACE/ of 1-64 of them (not sub/; a sub-agent's: PARENT/sub/NAME, "
            "at most 200 characters in all)")):
        load('thread = "my thread"\n')


async def test_a_toml_syntax_error_names_the_line_tomllib_reports() -> None:
    with pytest.raises(BlueprintError, match=exactly("bp.toml:3: not valid TOML: Invalid value (column 8)")) as info:
        load('thread = "t"\n[limits]\nsoft = \n')
    assert info.value.key is None


async def test_a_missing_file_or_a_directory_is_a_clear_error() -> None:
    with pytest.raises(BlueprintError, match=exactly("nope.toml: no such blueprint file; check the path")) as info:
        load_blueprint("nope.toml")
    assert info.value.line is None
    Path("folder.toml").mkdir()
    with pytest.raises(BlueprintError, match=exactly("folder.toml: is a directory, not a blueprint (.toml) file")):
        load_blueprint("folder.toml")


async def test_a_blueprint_error_is_a_usage_error() -> None:
    assert issubclass(BlueprintError, UsageError)


async def test_a_recap_shorter_than_the_shortest_allowed_is_refused_on_its_line() -> None:
    from livecontext.actors.recap import MIN_SUMMARY_CHARS

    with pytest.raises(BlueprintError, match=exactly(
            f"bp.toml:3: [recap] max_summary_chars must be >= {MIN_SUMMARY_CHARS}, got 100")):
        load('budget = 4000\n[recap]\nmax_summary_chars = 100\n')


async def test_a_postgresql_store_url_is_accepted() -> None:
    blueprint = load('thread = "t"\nstore = "postgresql://me@db.example:5432/agents"\n')
    assert blueprint.store == "postgresql://me@db.example:5432/agents"
