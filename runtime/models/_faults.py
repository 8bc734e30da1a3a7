"""Making chosen model attempts fail, to test how an agent copes with a flaky provider."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from livecontext.protocol import ModelReply, ModelRequest

from .. import UsageError
from ._client import ModelClient, TextCallback
from ._errors import FailureKind, TransientModelError


class FaultInjectingModel(ModelClient):
    """Wraps a client and makes chosen attempts fail with a :class:`TransientModelError`.

    Attempts are counted over every call made through this instance, from 0. A failed attempt
    never reaches ``inner``. Put it *inside* a :class:`RetryingModel` to test retries, or use
    it bare to test what an agent does when a model call fails::

        flaky = FaultInjectingModel(model, [FailureKind.RATE_LIMIT, None, FailureKind.SERVER])
        chaos = FaultInjectingModel.at_random(model, 0.2, random.Random(7))
    """

    def __init__(self, inner: ModelClient, failures: Sequence[FailureKind | None]) -> None:
        """Fail attempt ``n`` with ``failures[n]``; ``None``, and attempts past the end, pass."""
        plan = tuple(failures)
        self._init(inner, lambda attempt: plan[attempt] if attempt < len(plan) else None)

    @classmethod
    def at_random(
        cls,
        inner: ModelClient,
        probability: float,
        rng: random.Random,
        kinds: Sequence[FailureKind] = tuple(FailureKind),
    ) -> FaultInjectingModel:
        """Fail each attempt with ``probability``, with a kind drawn from ``kinds``.

        Seed ``rng`` to get the same faults on every run.

        Raises:
            UsageError: ``probability`` is not between 0 and 1, or ``kinds`` is empty.
        """
        if not 0 <= probability <= 1:
            raise UsageError(f"fault probability must be between 0 and 1, got {probability}")
        choices = tuple(kinds)
        if not choices:
            raise UsageError("at_random needs at least one FailureKind to inject")
        model = cls.__new__(cls)
        model._init(inner, lambda _attempt: rng.choice(choices) if rng.random() < probability else None)
        return model

    def _init(self, inner: ModelClient, decide: Callable[[int], FailureKind | None]) -> None:
        self.inner = inner
        """The client the attempts that pass are made with."""
        self.name = inner.name
        self._decide = decide
        self._attempts = 0
        self._injected: list[tuple[int, FailureKind]] = []

    @property
    def attempts(self) -> int:
        """How many attempts were made through this instance, failed ones included."""
        return self._attempts

    @property
    def injected(self) -> tuple[tuple[int, FailureKind], ...]:
        """The faults injected so far, as ``(attempt, kind)``."""
        return tuple(self._injected)

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        """Fail this attempt if chosen, otherwise ask ``inner``.

        Raises:
            TransientModelError: This attempt was chosen to fail.
        """
        attempt = self._attempts
        self._attempts += 1
        kind = self._decide(attempt)
        if kind is not None:
            self._injected.append((attempt, kind))
            raise TransientModelError(kind, f"injected fault at attempt {attempt}")
        return await self.inner.complete(request, on_text)

    async def aclose(self) -> None:
        """Close ``inner``."""
        await self.inner.aclose()
