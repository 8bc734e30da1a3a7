"""Opening a model client from its spec string (``echo``, ``scripted:PATH``, ``openai:MODEL``,
``cassette:PATH:SPEC``)."""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator

from .. import UsageError
from ._client import ModelClient
from ._cassette import CassetteModel, split_cassette_spec
from ._echo import EchoModel
from ._retry import RetryingModel, RetryPolicy
from ._scripted import ScriptedModel

SPEC_FORMS = ("echo", "scripted:PATH", "openai:MODEL")
"""The accepted forms of a model spec (each one can be wrapped in a cassette: ``cassette:PATH:SPEC``)."""


def make_model_client(spec: str, *, base_url: str | None = None, api_key: str | None = None) -> ModelClient:
    """The bare client (no retries) that ``spec`` names; the caller must close it.

    Raises:
        UsageError: ``spec`` has none of the accepted forms, or names a client that cannot
            be made (no API key...).
        ScriptError: The script of ``scripted:PATH`` is missing or malformed.
    """
    kind, colon, rest = spec.partition(":")
    if kind == "cassette" and colon:
        path, inner = split_cassette_spec(spec)
        if inner.startswith("cassette:"):
            raise UsageError(f"model spec {spec!r} records a cassette into a cassette: give one cassette:PATH:SPEC")
        return CassetteModel(path, lambda: make_model_client(inner, base_url=base_url, api_key=api_key),
                             model=inner, secrets=[api_key] if api_key else ())
    if spec == "echo":
        return EchoModel()
    if kind == "scripted" and colon and rest:
        return ScriptedModel.from_file(rest)
    if kind == "openai" and colon and rest:
        from ._openai import OpenAIModel  # openai takes a second to import: only when asked for

        return OpenAIModel(rest, base_url=base_url, api_key=api_key)
    raise UsageError(
        f"unknown model spec {spec!r}: use one of {', '.join(SPEC_FORMS)} "
        "(scripted:PATH names a JSON file of turns; e.g. openai:gpt-4o-mini; cassette:PATH:SPEC records "
        "SPEC's answers into the file PATH, or replays them: LIVECONTEXT_CASSETTE=record|replay)"
    )


@contextlib.asynccontextmanager
async def open_model_client(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    retry: RetryPolicy | None = None,
    rng: random.Random | None = None,
) -> AsyncIterator[RetryingModel]:
    """Open the client ``spec`` names, wrapped in a :class:`RetryingModel`; close it on exit.

    ``spec`` is ``"echo"``, ``"scripted:PATH"`` (a JSON script), ``"openai:MODEL"`` (any
    OpenAI-compatible server; ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY``) or ``"cassette:PATH:SPEC"`` (SPEC's answers recorded into the file PATH,
    or replayed from it: see :class:`CassetteModel`). The bare client is the yielded client's ``inner``.

    Args:
        spec: Which model.
        base_url: The OpenAI-compatible server's base URL (``openai:`` only).
        api_key: Its API key (``openai:`` only).
        retry: How to retry transient failures (default: :class:`RetryPolicy()`).
        rng: The randomness of the retry jitter (seed it for reproducible waits).

    Raises:
        UsageError: ``spec`` is not one of the accepted forms, or its client cannot be made.
        ScriptError: The script of ``scripted:PATH`` is missing or malformed.
    """
    client = RetryingModel(make_model_client(spec, base_url=base_url, api_key=api_key), retry, rng)
    try:
        yield client
    finally:
        await client.aclose()
