"""The spend ledger's messages: what an engine tells and asks the keeper of its spend limits.

An agent run with spend limits (and every agent of a system, every sub-agent of such an
agent) has one ledger actor that holds the limits and each thread's usage so far. Before a
model call the engine asks it :class:`CheckSpend` (with its thread's totals, from its own
log, and the call's input); after the call it tells it :class:`SpendReport` (its totals
again), so that the other threads sharing the limit see them. A thread's figures always come
whole from its own log: a report replaces the thread's previous one, never adds to it.
"""

from __future__ import annotations

from attrs import frozen

from ._entries import UsageTotals
from ._message import Message


@frozen
class SpendReport(Message):
    """A thread's usage so far (tell): the ledger keeps it in place of the thread's last one."""

    thread_id: str
    model: str
    """The spec of the model the thread runs with (``openai:gpt-4o``): what its usage is priced at."""
    usage: UsageTotals


@frozen
class CheckSpend(Message):
    """May a thread make its next model call? (ask: :class:`SpendVerdict`)."""

    thread_id: str
    model: str
    """The spec of the model the call goes to."""
    usage: UsageTotals
    """The thread's usage so far, from its log (it replaces the thread's last report)."""
    input_tokens: int
    """The rendered tokens the call will send."""
    shared_tokens: int = 0
    """Of those, the prefix shared with the thread's previous call (priced as cached input)."""


@frozen
class SpendVerdict(Message):
    """The ledger's answer to :class:`CheckSpend`."""

    stop: str | None = None
    """Why the call must not be made: the limit it would pass and the figures (``None``: go ahead)."""


SpendRequest = CheckSpend | SpendReport
"""What a spend ledger takes."""

SpendReply = SpendVerdict
"""Its answer to :class:`CheckSpend`."""
