"""The spend ledger: the one keeper of a set of spend limits, shared by the threads they cover.

An agent run with spend limits has a ledger (``spend/THREAD``); a system has one for all its
agents (``spend/SYSTEM``); a sub-agent uses its parent's. Each engine asks it before a model
call (:class:`~livecontext.protocol.agent.CheckSpend`) and tells it its thread's totals after one
(:class:`~livecontext.protocol.agent.SpendReport`); a call allowed counts as spent (its input) until
that report, so agents that call at once cannot pass a limit together. The totals are the
threads' own, folded from
their logs: a report replaces the thread's last one, so nothing is counted twice and the
ledger holds nothing a restart could lose for good (each thread's next report restores it).
What threads spent in earlier runs counts too: each engine reports its thread's totals when
it starts, and the ledger reads, when it starts, what the sub-agents of the threads it covers
spent (their threads are in the store, and no engine of theirs may run in this process).
"""

from __future__ import annotations

from collections.abc import Sequence

from livecontext.protocol.agent import CheckSpend, SpendReport, SpendVerdict
from livecontext.protocol.history import UsageTotals
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.wire import make_converter
from livecontext.runtime import Actor, handler
from livecontext.runtime.models import Price
from livecontext.runtime.persistence import EventStore

from ..history import load_state
from ._limits import SpendLimits

_FLAGS = {"max_input_tokens": "--max-input-tokens", "max_output_tokens": "--max-output-tokens",
          "max_cost": "--max-cost"}


def ledger_id(scope: str) -> ActorId:
    """The ledger of a thread's or a system's limits: ``spend/SCOPE``."""
    return ActorId("spend", scope)


def _money(value: float) -> str:
    return f"{value:.4f}"


def _limit(value: float) -> str:
    return f"{value:.2f}" if round(value, 2) == value else f"{value:g}"


def _raise(limit: str) -> str:
    return f"raise it with {_FLAGS[limit]} ([spend] {limit}) and run again"


class SpendLedger(Actor):
    """Holds spend limits and each covered thread's usage; answers whether a call may go.

    Args:
        limits: The limits.
        scope: What they cover, for the reasons it gives (``agent main``, ``system team``).
        store: The store of the threads covered, where their sub-agents' threads are too.
        roots: The threads covered (their sub-agents', ``THREAD/sub/NAME`` at any depth, are).
    """

    def __init__(self, limits: SpendLimits, scope: str, store: EventStore | None = None,
                 roots: Sequence[str] = ()) -> None:
        self.limits = limits
        self.scope = scope
        self.store = store
        self.roots = tuple(roots)
        self._threads: dict[str, tuple[str, UsageTotals]] = {}
        """Each thread's model spec and usage, as it last reported them."""
        self._prices: dict[str, Price | None] = {}
        """Each model's price, looked up once."""
        self._under_way: dict[str, tuple[int, float]] = {}
        """The input tokens and input cost of each call allowed and not yet reported (by
        thread): the agents of a system call at once, and a call under way counts."""

    def _price(self, model: str) -> Price | None:
        if model not in self._prices:
            self._prices[model] = self.limits.price_of(model)
        return self._prices[model]

    async def on_start(self) -> None:
        """Read what the sub-agents of :attr:`roots` spent in earlier runs (their engines
        report only while they run). A sub-agent's thread records its model's spec only if it
        was opened from one; one made from a client is priced when its engine next reports,
        and counts its tokens (not its cost) until then."""
        if self.store is None or not self.roots:
            return
        prefixes = tuple(f"{thread}/sub/" for thread in self.roots)
        converter = make_converter()
        for info in await self.store.threads():
            if info.thread_id.startswith(prefixes) and info.thread_id not in self._threads:
                async with await self.store.open_reader(info.thread_id) as reader:
                    state = await load_state(reader, converter, info.thread_id)
                model = state.config.model if state.config is not None else ""
                self._threads[info.thread_id] = (model, state.usage)

    def spent(self) -> tuple[UsageTotals, float]:
        """The usage of every covered thread, summed, with the input of the calls under way,
        and what it cost."""
        total, cost = UsageTotals(), 0.0
        for model, usage in self._threads.values():
            total = total + usage
            price = self._price(model)
            cost += price.of_usage(usage) if price is not None else 0.0  # (an unpriced sub-agent: see on_start)
        for tokens, call_cost in self._under_way.values():
            total = total + UsageTotals(input_tokens=tokens)
            cost += call_cost
        return total, cost

    @handler(inline=True)
    def on_report(self, msg: SpendReport) -> None:
        self._threads[msg.thread_id] = (msg.model, msg.usage)
        self._under_way.pop(msg.thread_id, None)  # (its usage holds the call now)

    @handler(inline=True)
    def on_check(self, msg: CheckSpend) -> SpendVerdict:
        """Allow the call, and count its input as under way until the thread reports again
        (a failed call is replaced by the thread's next check), or say why not."""
        self._threads[msg.thread_id] = (msg.model, msg.usage)
        self._under_way.pop(msg.thread_id, None)  # (a thread makes one call at a time)
        stop = self._stop(msg)
        if stop is None:
            price = self._price(msg.model)
            self._under_way[msg.thread_id] = (
                msg.input_tokens, price.of_input(msg.input_tokens, msg.shared_tokens) if price is not None else 0.0)
        return SpendVerdict(stop)

    def _stop(self, msg: CheckSpend) -> str | None:
        """Why ``msg``'s call would pass a limit, with the figures; ``None`` if it would not."""
        lim = self.limits
        spent, cost = self.spent()
        if lim.max_input_tokens is not None and spent.input_tokens + msg.input_tokens > lim.max_input_tokens:
            return (f"spend limit: max_input_tokens {lim.max_input_tokens} of {self.scope} would be passed: "
                    f"spent {spent.input_tokens}, this call {msg.input_tokens}; {_raise('max_input_tokens')}")
        if lim.max_output_tokens is not None and spent.output_tokens >= lim.max_output_tokens:
            return (f"spend limit: max_output_tokens {lim.max_output_tokens} of {self.scope} is reached: "
                    f"spent {spent.output_tokens}; {_raise('max_output_tokens')}")
        if lim.max_cost is not None:
            price = self._price(msg.model)
            if price is None:  # (refused when the agent opened: a model swapped in since)
                return f"spend limit: max_cost of {self.scope}: {lim.missing_price(msg.model)}"
            call = price.of_input(msg.input_tokens, msg.shared_tokens)
            if cost + call > lim.max_cost:
                return (f"spend limit: max_cost {_limit(lim.max_cost)} of {self.scope} would be passed: "
                        f"spent {_money(cost)}, this call {_money(call)}; {_raise('max_cost')}")
        return None
