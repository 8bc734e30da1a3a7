from __future__ import annotations

import random

import pytest
import trio

from livecontext.protocol.history import ChatMessage, ModelReply, ModelRequest, Role
from livecontext.runtime import UsageError
from livecontext.runtime.models import (
    EchoModel,
    FailureKind,
    FaultInjectingModel,
    ModelCallFailed,
    ModelClient,
    RetryingModel,
    RetryPolicy,
    ScriptedModel,
    ScriptExhaustedError,
    TextCallback,
    TransientModelError,
)

REQUEST = ModelRequest(messages=(ChatMessage(Role.USER, "hi"),))
EXACT = RetryPolicy(max_attempts=4, base_delay_s=0.5, max_delay_s=8.0, jitter=0.0)


class _AttemptTimes(ModelClient):
    """Records when each attempt started, then lets ``inner`` answer."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner
        self.name = inner.name
        self.times: list[float] = []

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        self.times.append(trio.current_time())
        return await self.inner.complete(request, on_text)


def _gaps(times: list[float]) -> list[float]:
    return [round(b - a, 6) for a, b in zip(times, times[1:], strict=False)]


async def test_the_policy_doubles_the_wait_up_to_its_cap() -> None:
    policy = RetryPolicy(max_attempts=8, base_delay_s=0.5, max_delay_s=3.0, jitter=0.0)
    rng = random.Random(0)
    assert [policy.delay_s(n, rng) for n in range(1, 7)] == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]


async def test_jitter_removes_at_most_its_fraction_of_a_wait() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=1.0, jitter=0.5)
    rng = random.Random(1)
    delays = [policy.delay_s(1, rng) for _ in range(200)]
    assert all(0.5 <= d <= 1.0 for d in delays)
    assert len(set(delays)) > 100


async def test_a_providers_retry_after_is_honoured_up_to_the_cap() -> None:
    rng = random.Random(0)
    assert EXACT.delay_s(1, rng, retry_after_s=3.0) == 3.0
    assert EXACT.delay_s(1, rng, retry_after_s=60.0) == 8.0
    assert EXACT.delay_s(3, rng, retry_after_s=0.1) == 2.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_attempts": 0}, "max_attempts must be at least 1, got 0"),
        ({"base_delay_s": -1.0}, "delays must not be negative"),
        ({"jitter": 1.5}, "jitter must be between 0 and 1, got 1.5"),
    ],
)
async def test_a_nonsensical_policy_is_a_usage_error(options: dict[str, float], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        RetryPolicy(**options)  # type: ignore[arg-type]


async def test_transient_failures_are_retried_with_exponential_backoff(autojump_clock: trio.abc.Clock) -> None:
    timed = _AttemptTimes(
        FaultInjectingModel(EchoModel(), [FailureKind.RATE_LIMIT, FailureKind.SERVER, FailureKind.TIMEOUT])
    )
    reply = await RetryingModel(timed, EXACT).complete(REQUEST)
    assert reply.text == "echo: hi"
    assert _gaps(timed.times) == [0.5, 1.0, 2.0]


async def test_after_the_last_attempt_the_call_fails_naming_the_attempts_and_last_error(
    autojump_clock: trio.abc.Clock,
) -> None:
    flaky = FaultInjectingModel(EchoModel(), [FailureKind.SERVER] * 3 + [FailureKind.RATE_LIMIT])
    with pytest.raises(
        ModelCallFailed,
        match=r"^model call failed after 4 attempts: rate_limit: injected fault at attempt 3; "
        r"the history was not changed, try again later$",
    ) as info:
        await RetryingModel(flaky, EXACT).complete(REQUEST)
    assert info.value.attempts == 4
    assert info.value.last_error.kind is FailureKind.RATE_LIMIT
    assert flaky.attempts == 4


async def test_a_non_transient_error_is_raised_at_once() -> None:
    scripted = ScriptedModel.from_turns([])
    flaky = FaultInjectingModel(scripted, [])
    with pytest.raises(ScriptExhaustedError):
        await RetryingModel(flaky, EXACT).complete(REQUEST)
    assert flaky.attempts == 1


async def test_cancelling_during_the_backoff_cancels_the_call(autojump_clock: trio.abc.Clock) -> None:
    flaky = FaultInjectingModel(EchoModel(), [FailureKind.SERVER] * 10)
    policy = RetryPolicy(max_attempts=10, base_delay_s=10.0, max_delay_s=10.0, jitter=0.0)
    with trio.move_on_after(15) as scope:
        await RetryingModel(flaky, policy).complete(REQUEST)
    assert scope.cancelled_caught
    assert flaky.attempts == 2


async def test_on_retry_is_told_each_failed_attempt_and_the_wait(autojump_clock: trio.abc.Clock) -> None:
    told: list[tuple[int, FailureKind, float]] = []
    flaky = FaultInjectingModel(EchoModel(), [FailureKind.TIMEOUT, FailureKind.SERVER])
    model = RetryingModel(flaky, EXACT, on_retry=lambda n, error, delay: told.append((n, error.kind, delay)))
    await model.complete(REQUEST)
    assert told == [(1, FailureKind.TIMEOUT, 0.5), (2, FailureKind.SERVER, 1.0)]


async def test_a_policy_of_one_attempt_never_retries() -> None:
    flaky = FaultInjectingModel(EchoModel(), [FailureKind.SERVER])
    with pytest.raises(ModelCallFailed, match="^model call failed after 1 attempt: server:"):
        await RetryingModel(flaky, RetryPolicy(max_attempts=1)).complete(REQUEST)


async def test_the_retrying_model_takes_its_inner_clients_name() -> None:
    assert RetryingModel(EchoModel()).name == "echo"


async def test_injected_faults_hit_exactly_the_chosen_attempts() -> None:
    flaky = FaultInjectingModel(EchoModel(), [None, FailureKind.TIMEOUT, None])
    assert (await flaky.complete(REQUEST)).text == "echo: hi"
    with pytest.raises(TransientModelError, match="^timeout: injected fault at attempt 1$"):
        await flaky.complete(REQUEST)
    for _ in range(3):
        await flaky.complete(REQUEST)
    assert flaky.injected == ((1, FailureKind.TIMEOUT),)
    assert flaky.attempts == 5


async def _outcomes(model: FaultInjectingModel, attempts: int) -> list[str]:
    outcomes = []
    for _ in range(attempts):
        try:
            await model.complete(REQUEST)
            outcomes.append("ok")
        except TransientModelError as error:
            outcomes.append(error.kind.value)
    return outcomes


async def test_random_faults_are_the_same_for_the_same_seed() -> None:
    first = await _outcomes(FaultInjectingModel.at_random(EchoModel(), 0.5, random.Random(42)), 40)
    second = await _outcomes(FaultInjectingModel.at_random(EchoModel(), 0.5, random.Random(42)), 40)
    assert first == second
    assert "ok" in first
    assert {"rate_limit", "server", "timeout"} <= set(first)


async def test_random_faults_use_only_the_kinds_given() -> None:
    model = FaultInjectingModel.at_random(EchoModel(), 1.0, random.Random(0), kinds=[FailureKind.TIMEOUT])
    assert await _outcomes(model, 5) == ["timeout"] * 5


async def test_a_fault_probability_outside_zero_to_one_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="fault probability must be between 0 and 1, got 1.5"):
        FaultInjectingModel.at_random(EchoModel(), 1.5, random.Random(0))
