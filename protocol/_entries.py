"""History entries: what the history store holds for one agent thread."""

from __future__ import annotations

import datetime as dt

from attrs import field, frozen

from ._content import Content, Level, Retention
from ._ids import ActorId
from ._tools import ToolCall, ToolResult


@frozen
class Notification:
    """A note posted to an agent by another actor; rides on the next observation, once."""

    id: str
    """Stable id, unique within the thread (``n1``, ``n2``, ...)."""
    sender: ActorId
    """Who posted it (stamped by the runtime)."""
    text: str
    """What the agent reads."""
    posted_at: dt.datetime
    """When the history store accepted it (UTC)."""
    key: str | None = None
    """What makes posting it again a no-op: a message between agents of a system is keyed
    by its sender and tool call (``planner:call_3_0``), so that the call, run again after a
    crash, delivers it once (``None``: an ordinary notification)."""


@frozen
class KeyedNote:
    """A keyed notification (a message between agents) and the entry it rode on."""

    notification: Notification
    read_in: str | None = None
    """The id of the entry that delivered it to the agent (``None``: still pending)."""


@frozen
class Usage:
    """Token usage of one model call: what the provider reported, or, for a model that
    reports none (the offline ones), the rendered count of its input."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Of ``prompt_tokens``, those the provider read from its prompt cache (OpenAI's
    ``usage.prompt_tokens_details.cached_tokens``); 0 when it said nothing."""
    counted: bool = False
    """The model reported nothing: these are our own counts (the rendered context, the
    answer), not the provider's."""


@frozen
class UsageTotals:
    """Usage summed over model calls: a thread's, an agent's with its sub-agents', a system's."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    """Of ``input_tokens``, those read from the provider's prompt cache."""
    output_tokens: int = 0
    model_calls: int = 0

    def plus(self, usage: Usage) -> UsageTotals:
        """These totals with one more call's ``usage``."""
        return UsageTotals(self.input_tokens + usage.prompt_tokens, self.cached_input_tokens + usage.cached_tokens,
                           self.output_tokens + usage.completion_tokens, self.model_calls + 1)

    def __add__(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(self.input_tokens + other.input_tokens,
                           self.cached_input_tokens + other.cached_input_tokens,
                           self.output_tokens + other.output_tokens, self.model_calls + other.model_calls)


@frozen(kw_only=True)
class ModelInputEntry:
    """An observation for the model: user input and the notifications delivered with it."""

    id: str
    revision: int
    author: ActorId
    created_at: dt.datetime
    retention: Retention
    content: Content
    """LIVE/RECENT/GIST of the observation (input text plus notifications)."""
    text: str
    """The input text as given (empty when the entry carries notifications only)."""
    notifications: tuple[Notification, ...] = ()
    folded: bool = False
    """Marked folded into a recap (still stored, no longer rendered)."""
    key: str | None = None
    """The key of the input, if a system's run of inputs fed it (see
    :class:`~livecontext.protocol.system.InputsGiven`)."""


@frozen(kw_only=True)
class ModelOutputEntry:
    """One answer of the model: text and tool calls."""

    id: str
    revision: int
    author: ActorId
    created_at: dt.datetime
    retention: Retention
    content: Content
    """The answer's text at each level."""
    tool_calls: tuple[ToolCall, ...] = ()
    model: str = ""
    usage: Usage = field(factory=Usage)
    folded: bool = False
    sent_tokens: int = 0
    """The tokens of the context the call was sent, as rendered (0: recorded before this was)."""
    shared_tokens: int = 0
    """Of :attr:`sent_tokens`, those of the leading messages identical to the previous call's
    context: the prefix a provider's prompt cache can serve."""
    recent_arguments: tuple[str, ...] = ()
    """The calls' arguments at RECENT, one per call, long strings elided inside valid JSON;
    empty when they are the arguments as written (nothing was long)."""
    gist_arguments: tuple[str, ...] = ()
    """The calls' arguments at GIST, elided harder; empty when they are those of RECENT."""

    def calls_at(self, level: Level) -> tuple[ToolCall, ...]:
        """The tool calls as rendered at ``level``: same ids and names, arguments of that level.

        The level's token count (in :attr:`content`) includes these calls.
        """
        if level is Level.LIVE:
            return self.tool_calls
        arguments = self.recent_arguments
        if level is Level.GIST and self.gist_arguments:
            arguments = self.gist_arguments
        if not arguments:
            return self.tool_calls
        return tuple(ToolCall(c.id, c.name, a) for c, a in zip(self.tool_calls, arguments, strict=True))


@frozen(kw_only=True)
class ToolResultsEntry:
    """The results of every tool call of the model output before it."""

    id: str
    revision: int
    author: ActorId
    created_at: dt.datetime
    retention: Retention
    content: Content
    """A summary of the results at each level (the results carry their own levels)."""
    results: tuple[ToolResult, ...] = ()
    notifications: tuple[Notification, ...] = ()
    folded: bool = False


@frozen(kw_only=True)
class RecapEntry:
    """A summary standing for a contiguous range of folded entries."""

    id: str
    revision: int
    author: ActorId
    created_at: dt.datetime
    retention: Retention
    content: Content
    covers: tuple[str, ...] = ()
    """Ids of the entries this recap stands for, oldest first."""
    strategy: str = ""
    """How it was made: the recap maintainer's strategy (``simple_extract``, ``model_summary``
    or ``structured``), or whatever name another actor that folds gave it. Open text, not an
    enum: any actor with the fold capability may fold, and stored logs hold its names."""
    folded: bool = False
    data: str = ""
    """The strategy's own state as JSON text (what the next fold builds on), or empty."""


HistoryEntry = ModelInputEntry | ModelOutputEntry | ToolResultsEntry | RecapEntry
"""Any entry of a thread's history."""

ENTRY_KINDS: dict[type, str] = {
    ModelInputEntry: "model_input",
    ModelOutputEntry: "model_output",
    ToolResultsEntry: "tool_results",
    RecapEntry: "recap",
}
"""The short name of each entry type, as shown by the CLI and audits."""


def id_number(ident: str) -> int:
    """The number in an entry's or a notification's id (``e12`` -> 12, ``n3`` -> 3).

    A history store gives ids in increasing order, so their numbers order entries by age.
    """
    rest = ident[1:]
    if rest.isdigit() and not ident[0].isdigit():  # (what the store writes: the common case)
        return int(rest)
    digits = "".join(ch for ch in ident if ch.isdigit())
    return int(digits) if digits else 0
