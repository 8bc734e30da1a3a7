"""Opening the models a blueprint names besides the agent's: the recap's and the analyzers'."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from types import MappingProxyType

from attrs import field, frozen

from livecontext.runtime import RuntimeClock, WallClock
from livecontext.runtime.models import ModelClient, open_model_client

from ._blueprint import Blueprint


def _readonly(value: Mapping[str, ModelClient]) -> Mapping[str, ModelClient]:
    return MappingProxyType(dict(value))


@frozen
class BlueprintModels:
    """The open side models of a blueprint, for ``spawn_agent(recap_model=, analyzer_models=)``."""

    recap: ModelClient | None = None
    """The recap maintainer's model (``model_summary`` only)."""
    analyzers: Mapping[str, ModelClient] = field(factory=dict, converter=_readonly, hash=False)
    """Each ``model`` analyzer's model, by analyzer name."""


@contextlib.asynccontextmanager
async def open_blueprint_models(
    blueprint: Blueprint | None, *, base_url: str | None = None, api_key: str | None = None,
    clock: RuntimeClock = WallClock(),
) -> AsyncIterator[BlueprintModels]:
    """Open the recap's and the analyzers' models; close them all on exit.

    Each gets its own client (and so its own retries and budget), never the agent's.
    The agent's own model is opened by the session, as without a blueprint.

    Args:
        blueprint: The blueprint; ``None`` opens nothing (``run`` without a blueprint).
        base_url: The OpenAI-compatible server of every ``openai:`` spec.
        api_key: Its API key.
        clock: The runtime's clock, whose randomness the retries' jitter is drawn from.

    Raises:
        UsageError: A spec cannot be opened (an ``openai:`` model without an API key...).
        ScriptError: A ``scripted:`` script is malformed.
    """
    if blueprint is None:
        yield BlueprintModels()
        return
    async with contextlib.AsyncExitStack() as stack:
        recap = None
        if blueprint.recap_model is not None:
            recap = await stack.enter_async_context(
                open_model_client(blueprint.recap_model, base_url=base_url, api_key=api_key,
                                  rng=clock.random("retry:recap")))
        analyzers: dict[str, ModelClient] = {}
        for name, spec in blueprint.analyzer_models.items():
            analyzers[name] = await stack.enter_async_context(
                open_model_client(spec, base_url=base_url, api_key=api_key, rng=clock.random(f"retry:analyzer:{name}")))
        yield BlueprintModels(recap, analyzers)
