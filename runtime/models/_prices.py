"""What model calls cost: a price per million tokens for each model, and the known defaults.

The defaults are OpenAI's list prices, in one data file (``prices.toml``, beside this
module) that says where they come from; a blueprint's ``[spend.prices."MODEL"]`` tables
override them. Spend limits (``livecontext.actors.spend``) price a thread's calls with them.
"""

from __future__ import annotations

import functools
import math
import tomllib
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType

from attrs import frozen

from livecontext.protocol.history import UsageTotals

from .. import UsageError
from ._cassette import split_cassette_spec

OFFLINE_MODELS = ("echo", "scripted")
"""The kinds of model spec that call no provider: they cost nothing unless priced."""

_FIELDS = ("input", "cached_input", "output")


class PriceError(UsageError):
    """A price is not usable (negative, not a number, a missing or unknown field)."""


@frozen
class Price:
    """What a model charges, in money per million tokens."""

    input: float
    """Per million input tokens not read from the provider's prompt cache."""
    cached_input: float
    """Per million input tokens read from the prompt cache (usually a tenth to a half of ``input``)."""
    output: float
    """Per million output tokens (reasoning tokens included)."""

    def __attrs_post_init__(self) -> None:
        for name in _FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise PriceError(f"a price's {name} must be a number >= 0 (money per million tokens), got {value!r}")

    def of_usage(self, usage: UsageTotals) -> float:
        """What ``usage`` costs: its cached input at the cached price, the rest of its input
        at the input price, its output at the output price."""
        fresh = max(usage.input_tokens - usage.cached_input_tokens, 0)
        return (fresh * self.input + usage.cached_input_tokens * self.cached_input
                + usage.output_tokens * self.output) / 1_000_000

    def of_input(self, tokens: int, cached: int) -> float:
        """What sending ``tokens`` input tokens costs, ``cached`` of them from the prompt cache."""
        cached = min(cached, tokens)
        return ((tokens - cached) * self.input + cached * self.cached_input) / 1_000_000


FREE = Price(0.0, 0.0, 0.0)
"""The price of an offline model nobody priced."""


def price_from_table(value: object, where: str) -> Price:
    """The :class:`Price` a TOML table (or mapping) ``value`` describes; ``where`` names it in errors.

    Raises:
        PriceError: it is not a table of ``input``, ``cached_input`` and ``output`` numbers >= 0.
    """
    if not isinstance(value, Mapping):
        raise PriceError(f"{where} must be a table of input, cached_input and output, got {value!r}")
    unknown = sorted(set(value) - set(_FIELDS))
    missing = [name for name in _FIELDS if name not in value]
    if unknown or missing:
        said = "; ".join(p for p in (f"unknown {', '.join(unknown)}" if unknown else "",
                                      f"missing {', '.join(missing)}" if missing else "") if p)
        raise PriceError(f"{where} needs exactly input, cached_input and output (money per million "
                         f"tokens): {said}")
    try:
        return Price(value["input"], value["cached_input"], value["output"])
    except PriceError as exc:
        raise PriceError(f"{where}: {exc}") from None


@functools.cache
def default_prices() -> Mapping[str, Price]:
    """The known list prices, by model name (read once from ``prices.toml``)."""
    text = resources.files(__package__).joinpath("prices.toml").read_text(encoding="utf-8")
    table = tomllib.loads(text)
    return MappingProxyType({name: price_from_table(value, f"prices.toml [{name}]") for name, value in table.items()})


def find_price(spec: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of the model ``spec`` names (``openai:gpt-4o``, ``echo``, ``scripted:PATH``)
    in ``prices``; ``None`` if it has none.

    Looked up by the whole spec, then by the model's name (``gpt-4o``), then by the longest
    key the name starts with followed by ``-`` (a dated snapshot: ``gpt-4o-2024-08-06``);
    an offline model's kind (``echo``, ``scripted``) is a key too, and an offline model no key
    prices is free.
    """
    kind, colon, rest = spec.partition(":")
    if kind == "cassette" and colon:  # a cassette costs what the model it records costs
        try:
            return find_price(split_cassette_spec(spec)[1], prices)
        except UsageError:
            return None
    name = rest if colon and kind == "openai" else spec
    for key in (spec, name, kind):
        if key in prices:
            return prices[key]
    dated = [key for key in prices if name.startswith(f"{key}-")]
    if dated:
        return prices[max(dated, key=len)]
    return FREE if kind in OFFLINE_MODELS else None
