from __future__ import annotations

import inspect
import json
import random
from pathlib import Path

import pytest

import livecontext.runtime.models as models
from livecontext.protocol.history import ChatMessage, ModelRequest, Role
from livecontext.runtime import UsageError
from livecontext.runtime.models import (
    EchoModel,
    OpenAIModel,
    RetryingModel,
    RetryPolicy,
    ScriptedModel,
    ScriptError,
    open_model_client,
)

REQUEST = ModelRequest(messages=(ChatMessage(Role.USER, "hi"),))


async def test_echo_opens_an_echo_model_wrapped_in_retries() -> None:
    async with open_model_client("echo") as client:
        assert isinstance(client, RetryingModel)
        assert isinstance(client.inner, EchoModel)
        assert client.name == "echo"
        assert (await client.complete(REQUEST)).text == "echo: hi"


async def test_scripted_opens_the_script_at_the_path(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"turns": [{"text": "scripted hello"}]}), encoding="utf-8")
    async with open_model_client(f"scripted:{path}") as client:
        assert isinstance(client.inner, ScriptedModel)
        assert client.name == f"scripted:{path}"
        assert (await client.complete(REQUEST)).text == "scripted hello"


async def test_a_bad_script_fails_the_open_with_a_script_error(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="no such file"):
        async with open_model_client(f"scripted:{tmp_path / 'missing.json'}"):
            pass  # pragma: no cover


async def test_openai_opens_an_openai_model_and_closes_it_on_exit() -> None:
    policy = RetryPolicy(max_attempts=2)
    async with open_model_client(
        "openai:gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key="k", retry=policy, rng=random.Random(3)
    ) as client:
        inner = client.inner
        assert isinstance(inner, OpenAIModel)
        assert inner.model == "gpt-4o-mini"
        assert inner.base_url == "http://127.0.0.1:9/v1"
        assert client.policy is policy
    assert inner._client.is_closed()


@pytest.mark.parametrize("spec", ["", "gpt-4o", "scripted:", "openai:", "echo:loud", "Echo"])
async def test_an_unknown_spec_is_a_usage_error_listing_the_accepted_forms(spec: str) -> None:
    with pytest.raises(
        UsageError, match=rf"^unknown model spec '{spec}': use one of echo, scripted:PATH, openai:MODEL "
    ):
        async with open_model_client(spec):
            pass  # pragma: no cover


async def test_every_public_name_is_exported_once_and_documented() -> None:
    assert sorted(models.__all__) == sorted(set(models.__all__))
    for name in models.__all__:
        value = getattr(models, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert getattr(value, "__doc__", None), f"{name} has no docstring"
            assert value.__module__.startswith("livecontext.runtime.models"), name
