"""Retrying transient model failures with exponential backoff and jitter."""

from __future__ import annotations

import random
from collections.abc import Callable

import trio
from attrs import frozen

from livecontext.protocol import ModelReply, ModelRequest

from .. import UsageError
from ._client import ModelClient, TextCallback
from ._errors import ModelCallFailed, TransientModelError

RetryCallback = Callable[[int, TransientModelError, float], None]
"""Told ``(failed_attempt, error, delay_s)`` before each wait: e.g. to tell a reader that the
text streamed so far is discarded and the answer starts over."""


@frozen
class RetryPolicy:
    """How often and how patiently to retry a model call that failed transiently.

    The wait before attempt ``n + 1`` is ``base_delay_s * 2 ** (n - 1)``, capped at
    ``max_delay_s``, minus a random fraction of up to ``jitter`` of it (so that many agents
    hit by the same outage do not retry in lockstep). A provider's ``Retry-After`` is honoured
    up to ``max_delay_s``.
    """

    max_attempts: int = 4
    """Attempts in all, the first one included (1 means: never retry)."""
    base_delay_s: float = 0.5
    """The wait after the first failure, before jitter."""
    max_delay_s: float = 8.0
    """No wait is longer than this."""
    jitter: float = 0.5
    """The largest fraction of a wait removed at random (0: exact waits)."""

    def __attrs_post_init__(self) -> None:
        if self.max_attempts < 1:
            raise UsageError(f"RetryPolicy.max_attempts must be at least 1, got {self.max_attempts}")
        if self.base_delay_s < 0 or self.max_delay_s < 0:
            raise UsageError(
                "RetryPolicy delays must not be negative, got "
                f"base_delay_s={self.base_delay_s}, max_delay_s={self.max_delay_s}"
            )
        if not 0 <= self.jitter <= 1:
            raise UsageError(f"RetryPolicy.jitter must be between 0 and 1, got {self.jitter}")

    def delay_s(self, failed_attempt: int, rng: random.Random, retry_after_s: float | None = None) -> float:
        """How long to wait after attempt ``failed_attempt`` (1-based) failed."""
        backoff = min(self.max_delay_s, self.base_delay_s * 2.0 ** (failed_attempt - 1))
        backoff *= 1 - self.jitter * rng.random()
        if retry_after_s is not None:
            backoff = max(backoff, min(retry_after_s, self.max_delay_s))
        return backoff


class RetryingModel(ModelClient):
    """Wraps a client: retries its :class:`TransientModelError` failures, backing off.

    Other errors are raised at once, and so is cancellation: a cancelled call is never retried
    and never turned into an error. When the attempts run out it raises
    :class:`ModelCallFailed`, which names the attempts made and the last error.

    Every attempt streams from the start, so ``on_text`` may receive the beginning of an answer
    more than once; pass ``on_retry`` to learn when to discard what was shown.
    """

    def __init__(
        self,
        inner: ModelClient,
        policy: RetryPolicy | None = None,
        rng: random.Random | None = None,
        *,
        on_retry: RetryCallback | None = None,
    ) -> None:
        self.inner = inner
        """The client each attempt is made with."""
        self.policy = policy if policy is not None else RetryPolicy()
        """How often and how patiently to retry."""
        self.name = inner.name
        self._rng = rng if rng is not None else random.Random()
        self._on_retry = on_retry

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        """Ask ``inner`` until an attempt succeeds or the policy's attempts run out.

        Raises:
            ModelCallFailed: Every attempt failed with a transient error.
            ModelError: An attempt failed with a non-transient error (raised as is).
        """
        attempt = 1
        while True:
            try:
                return await self.inner.complete(request, on_text)
            except TransientModelError as error:
                if attempt >= self.policy.max_attempts:
                    raise ModelCallFailed(attempt, error) from error
                delay = self.policy.delay_s(attempt, self._rng, error.retry_after_s)
                if self._on_retry is not None:
                    self._on_retry(attempt, error, delay)
            await trio.sleep(delay)
            attempt += 1

    async def aclose(self) -> None:
        """Close ``inner``."""
        await self.inner.aclose()

