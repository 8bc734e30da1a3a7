"""What bench_context_quality prices: the prefix a call shares with the call before, and the baseline."""

from __future__ import annotations

from benchmarks.cache_cost import CACHE_READ_PRICE, PrefixMeter, everything
from livecontext.protocol.history import ChatMessage, Role



def meter() -> PrefixMeter:
    return PrefixMeter(lambda text: len(text.split()), message_tokens=1, call_tokens=0)


def test_a_context_that_only_grows_is_cached_up_to_everything_the_call_before_sent() -> None:
    system, task, step = (ChatMessage(Role.SYSTEM, "a b c"), ChatMessage(Role.USER, "d e"),
                          ChatMessage(Role.ASSISTANT, "f g h i"))
    costs = meter().run([[system, task], [system, task, step]])
    assert costs.sent == [4 + 3, 4 + 3 + 5]
    assert costs.cached == [0, 7]
    assert costs.cost == 7 + (5 + CACHE_READ_PRICE * 7)
    assert costs.cached_share == 7 / 19


def test_a_change_near_the_top_leaves_only_what_comes_before_it_cached() -> None:
    system = ChatMessage(Role.SYSTEM, "a b c")
    costs = meter().run([[system, ChatMessage(Role.USER, "d e"), ChatMessage(Role.USER, "x")],
                         [system, ChatMessage(Role.USER, "d"), ChatMessage(Role.USER, "x")]])
    assert costs.cached == [0, 4]  # the system prompt alone: an equal message after a changed one counts for nothing


def test_sending_everything_caches_the_previous_call_but_its_last_tail_tokens() -> None:
    costs = everything([100, 150, 230], tail=10)
    assert costs.cached == [0, 90, 140]
    assert costs.cost == 100 + (60 + 9) + (90 + 14)
