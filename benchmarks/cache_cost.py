"""What a run's model calls cost when the provider caches prompt prefixes (``bench_context_quality.py``).

Providers charge about a tenth for the part of a prompt that begins like an earlier one
(Anthropic's cache reads 0.1x; OpenAI's cached input 0.1x-0.5x by model). The model here is
the plain one: a call's cached part is the run of leading messages it shares with the call
just before it (the tools' schemas aside: they are the same in every call and in the
baseline); the rest is paid in full. Only input is priced: the outputs are the same whatever
the context.

The baseline is *sending everything*: every call sends the whole transcript so far, each
step as it was written. It only ever grows at its end, so each call's cached part is the
whole previous call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attrs import define, field

from livecontext.protocol.history import ChatMessage

CACHE_READ_PRICE = 0.1
"""What a cached input token costs, as a share of an uncached one."""


@define
class CallCosts:
    """The input of a run's calls: tokens sent, of them read from the cache, and their cost
    (in uncached tokens)."""

    sent: list[int] = field(factory=list)
    cached: list[int] = field(factory=list)

    @property
    def cost(self) -> float:
        return sum(s - c + CACHE_READ_PRICE * c for s, c in zip(self.sent, self.cached))

    @property
    def cached_share(self) -> float:
        return sum(self.cached) / sum(self.sent) if self.sent else 0.0


class PrefixMeter:
    """Counts each message once (by identity: the runtime sends the same message objects
    while they stay the same) and measures what a sequence of requests costs."""

    def __init__(self, count: Callable[[str], int], message_tokens: int, call_tokens: int) -> None:
        self.count = count
        self.message_tokens = message_tokens
        self.call_tokens = call_tokens
        self._counted: dict[int, tuple[ChatMessage, int]] = {}

    def tokens(self, message: ChatMessage) -> int:
        kept = self._counted.get(id(message))
        if kept is not None and kept[0] is message:
            return kept[1]
        tokens = self.count(message.content) + self.message_tokens
        for call in message.tool_calls:
            tokens += self.count(call.name) + self.count(call.arguments) + self.call_tokens
        self._counted[id(message)] = (message, tokens)
        return tokens

    def run(self, requests: Sequence[Sequence[ChatMessage]]) -> CallCosts:
        """What ``requests`` (each a call's messages, in order) cost."""
        costs = CallCosts()
        previous: Sequence[ChatMessage] = ()
        for messages in requests:
            per = [self.tokens(m) for m in messages]
            same = 0
            for a, b in zip(previous, messages):
                if a is not b and a != b:
                    break
                same += 1
            costs.sent.append(sum(per))
            costs.cached.append(sum(per[:same]))
            previous = messages
        return costs


def everything(whole: Sequence[int], tail: int = 0) -> CallCosts:
    """The baseline: call ``k`` sends ``whole[k]`` tokens, of which the previous call's are
    cached, but its last ``tail`` tokens: the apps' windows, sent after everything in either
    case (an agent shows the apps' state at every call, whatever it does with the history)."""
    costs = CallCosts()
    before = 0
    for tokens in whole:
        costs.sent.append(tokens)
        costs.cached.append(min(max(before - tail, 0), tokens))
        before = tokens
    return costs
