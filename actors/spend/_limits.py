"""Spend limits: how many tokens an agent (a system, an agent and its sub-agents) may spend,
and what its calls cost."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from attrs import field, frozen

from livecontext.runtime import UsageError
from livecontext.runtime.models import Price, default_prices, find_price


class SpendLimitsError(UsageError):
    """Spend limits that cannot be used: a limit that is not a number > 0, or a ``max_cost``
    for a model no price is known for."""


def _positive_int(name: str, value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SpendLimitsError(f"{name} must be a whole number of tokens > 0, got {value!r}; "
                               "leave it out for no limit")


def _prices(value: Mapping[str, Price]) -> Mapping[str, Price]:
    for model, price in value.items():
        if not isinstance(model, str) or not model.strip():
            raise SpendLimitsError(f"a price's model must be a model name or spec, got {model!r}")
        if not isinstance(price, Price):
            raise SpendLimitsError(f"the price of {model!r} must be a Price(input, cached_input, output), "
                                   f"got {price!r}")
    return MappingProxyType(dict(value))


@frozen
class SpendLimits:
    """How much an agent may spend before the engine stops before its next model call.

    The engine never starts a call that would pass a limit: it pauses with a reason naming the
    limit and the figures (status ``paused``), and running again with the limit raised goes
    on from there. A system's limits cover all its agents; a sub-agent spends from its
    parent's. What was spent is read from the threads' logs, so the limits hold across runs.

    Leave a limit out (``None``) for none.
    """

    max_input_tokens: int | None = None
    """Input tokens sent over all calls (cached ones included), the coming call's included."""
    max_output_tokens: int | None = None
    """Output tokens received: no call starts once this many were spent (a call's output is
    unknown before it is made)."""
    max_cost: float | None = None
    """Money spent, priced with :attr:`prices`; the coming call's input counts before it is made."""
    prices: Mapping[str, Price] = field(factory=dict, converter=_prices, hash=False)
    """Prices by model (a name such as ``gpt-4o`` or a spec such as ``openai:gpt-4o``), in place
    of the known defaults (:func:`~livecontext.runtime.models.default_prices`); the offline
    models (``echo``, ``scripted``) cost nothing unless priced here."""

    def __attrs_post_init__(self) -> None:
        _positive_int("max_input_tokens", self.max_input_tokens)
        _positive_int("max_output_tokens", self.max_output_tokens)
        cost = self.max_cost
        if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int | float)
                                 or not math.isfinite(cost) or cost <= 0):
            raise SpendLimitsError(f"max_cost must be an amount of money > 0, got {cost!r}; leave it out for no limit")
        if self.max_input_tokens is None and self.max_output_tokens is None and cost is None:
            raise SpendLimitsError("spend limits set none of max_input_tokens, max_output_tokens and max_cost; "
                                   "set one, or give no spend limits")

    def price_of(self, model: str) -> Price | None:
        """The price of the model spec ``model`` in the known defaults with :attr:`prices` in
        their place (one table: a dated snapshot takes the longest name of either)."""
        return find_price(model, {**default_prices(), **self.prices})

    def check_model(self, model: str) -> None:
        """Check that calls to the model spec ``model`` can be counted against these limits.

        Raises:
            SpendLimitsError: ``max_cost`` is set and no price is known for ``model``; the
                message says how to add one.
        """
        missing = self.missing_price(model)
        if missing is not None:
            raise SpendLimitsError(missing)

    def missing_price(self, model: str) -> str | None:
        """What :meth:`check_model` would say of ``model`` (``None``: nothing)."""
        if self.max_cost is None or self.price_of(model) is not None:
            return None
        kind, colon, rest = model.partition(":")
        name = rest if colon and kind == "openai" else model
        return (f"max_cost needs the price of model {model!r}, and none is known: add it to the blueprint "
                f"([spend.prices.\"{name}\"] input = ..., cached_input = ..., output = ..., in money per "
                f"million tokens) or to SpendLimits(prices={{\"{name}\": Price(input, cached_input, output)}}), "
                "or limit tokens (max_input_tokens, max_output_tokens) instead")



def override_limits(given: SpendLimits | None, *, max_input_tokens: int | None = None,
                    max_output_tokens: int | None = None, max_cost: float | None = None) -> SpendLimits | None:
    """``given`` with the limits passed in place of its own (``None`` keeps one; no limits
    and none passed: ``None``): what ``run --max-cost`` does to a blueprint's ``[spend]``.

    Raises:
        SpendLimitsError: a limit passed is not > 0.
    """
    if max_input_tokens is None and max_output_tokens is None and max_cost is None:
        return given
    base = given if given is not None else None
    return SpendLimits(
        max_input_tokens if max_input_tokens is not None else (base.max_input_tokens if base else None),
        max_output_tokens if max_output_tokens is not None else (base.max_output_tokens if base else None),
        max_cost if max_cost is not None else (base.max_cost if base else None),
        base.prices if base else {})
