"""``[spend]``: spend limits and the price table, whose defaults ship in one data file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from livecontext.actors.blueprint import BlueprintError, parse_blueprint, parse_system_blueprint
from livecontext.actors.spend import SpendLimits
from livecontext.runtime.models import FREE, Price, default_prices, find_price

KNOWN = ("gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o", "gpt-4o-mini",
         "o3", "o4-mini")


def load(text: str) -> SpendLimits | None:
    return parse_blueprint(text, "bp.toml", base=Path.cwd()).settings.spend


def exactly(text: str) -> str:
    return f"^{re.escape(text)}$"


async def test_the_default_prices_load_for_every_known_openai_model() -> None:
    prices = default_prices()
    assert set(prices) == set(KNOWN)
    assert prices["gpt-4o-mini"] == Price(input=0.15, cached_input=0.075, output=0.6)
    assert prices["gpt-5"] == Price(input=1.25, cached_input=0.125, output=10.0)
    assert all(p.cached_input < p.input for p in prices.values())


async def test_a_dated_snapshot_takes_the_price_of_the_longest_name_it_starts_with() -> None:
    prices = default_prices()
    assert find_price("openai:gpt-4o-mini-2024-07-18", prices) == prices["gpt-4o-mini"]
    assert find_price("openai:gpt-4.1-2025-04-14", prices) == prices["gpt-4.1"]
    assert find_price("openai:gpt-4o", prices) == prices["gpt-4o"]
    assert find_price("openai:somebody-elses-model", prices) is None


async def test_offline_models_are_free_unless_priced() -> None:
    assert find_price("echo", default_prices()) == FREE
    assert find_price("scripted:/tmp/turns.json", default_prices()) == FREE
    assert find_price("scripted:/tmp/turns.json", {"scripted": Price(1, 0.1, 2)}) == Price(1, 0.1, 2)


async def test_a_blueprints_price_overrides_the_default_and_the_other_defaults_stay() -> None:
    limits = load('model = "openai:gpt-4o"\n\n[spend]\nmax_cost = 0.5\nmax_output_tokens = 2000\n\n'
                  '[spend.prices."gpt-4o"]\ninput = 2.0\ncached_input = 1.0\noutput = 9\n')
    assert limits is not None
    assert (limits.max_input_tokens, limits.max_output_tokens, limits.max_cost) == (None, 2000, 0.5)
    assert limits.price_of("openai:gpt-4o") == Price(2.0, 1.0, 9.0)
    assert limits.price_of("openai:gpt-4o-2024-08-06") == Price(2.0, 1.0, 9.0)
    assert limits.price_of("openai:gpt-4o-mini") == default_prices()["gpt-4o-mini"]


async def test_a_blueprint_without_spend_has_no_limits() -> None:
    assert load('model = "echo"\n') is None


async def test_a_max_cost_for_a_model_with_no_known_price_is_refused_on_the_models_line() -> None:
    with pytest.raises(BlueprintError, match=exactly(
            "bp.toml:2: model 'openai:my-own-model': [spend] max_cost needs the price of model "
            "'openai:my-own-model', and none is known: add it to the blueprint ([spend.prices.\"my-own-model\"] "
            "input = ..., cached_input = ..., output = ..., in money per million tokens) or to "
            "SpendLimits(prices={\"my-own-model\": Price(input, cached_input, output)}), or limit tokens "
            "(max_input_tokens, max_output_tokens) instead")):
        load('budget = 9000\nmodel = "openai:my-own-model"\n\n[spend]\nmax_cost = 1.0\n')


async def test_a_model_priced_in_the_blueprint_may_have_a_max_cost() -> None:
    limits = load('model = "openai:my-own-model"\n\n[spend]\nmax_cost = 1.0\n\n'
                  '[spend.prices."my-own-model"]\ninput = 0.1\ncached_input = 0.01\noutput = 0.3\n')
    assert limits is not None and limits.price_of("openai:my-own-model") == Price(0.1, 0.01, 0.3)


@pytest.mark.parametrize(("text", "message"), [
    ("[spend]\n", "bp.toml:1: [spend] sets none of max_input_tokens, max_output_tokens and max_cost; set one, "
                  "or remove [spend]"),
    ("[spend]\nmax_cost = 0\n", "bp.toml:2: [spend] max_cost must be > 0.0, got 0"),
    ("[spend]\nmax_input_tokens = -3\n", "bp.toml:2: [spend] max_input_tokens must be >= 1, got -3"),
    ("[spend]\nmax_output_tokens = 1.5\n", "bp.toml:2: [spend] max_output_tokens must be an integer, got a float 1.5"),
    ("[spend]\nmax_costs = 1\n", "bp.toml:2: unknown key 'max_costs' in [spend] (did you mean 'max_cost'?); "
                                 "known keys: max_input_tokens, max_output_tokens, max_cost, prices"),
    ('[spend]\nmax_cost = 1\n[spend.prices."x"]\ninput = -1\ncached_input = 0\noutput = 1\n',
     'bp.toml:1: [spend.prices."x"] input must be >= 0, got -1'),
    ('[spend]\nmax_cost = 1\n[spend.prices."x"]\ninput = 1\n',
     'bp.toml:1: [spend.prices."x"] needs cached_input (money per million tokens); it takes input, cached_input, output'),
    ('[spend]\nmax_cost = 1\n[spend.prices."x"]\ninput = "1"\ncached_input = 0\noutput = 1\n',
     "bp.toml:1: [spend.prices.\"x\"] input must be a number, got a string '1'"),
])
async def test_bad_spend_keys_are_refused_with_what_to_do(text: str, message: str) -> None:
    with pytest.raises(BlueprintError, match=exactly(message)):
        load(text)


async def test_a_systems_spend_is_at_its_top_level_and_not_in_an_agents_table() -> None:
    bp = parse_system_blueprint('system = "team"\n\n[spend]\nmax_input_tokens = 5000\n\n[[agents]]\nname = "a"\n',
                                "team.toml", base=Path.cwd())
    assert bp.spend == SpendLimits(max_input_tokens=5000)
    with pytest.raises(BlueprintError, match=exactly(
            "team.toml:4: [[agents]] #1 has a [spend] table, but a system's spend limits cover all its agents: "
            "put [spend] at the top level of the system blueprint")):
        parse_system_blueprint('system = "team"\n[[agents]]\nname = "a"\n[agents.spend]\nmax_cost = 1\n',
                               "team.toml", base=Path.cwd())
