"""The ``stable`` render policy: a context that only grows at its end between compactions
(DESIGN.md, "Keeping the prefix").

Providers cache prompt prefixes and charge about a tenth for the cached part. The ``fill``
policy (:func:`._render.render` at every call) re-chooses every entry's level each time, so the
context changes near its top at every call and the cache rarely hits. This policy keeps a
*frame*: the messages of the last compaction. A call sends the frame unchanged, then every
entry appended since, each unit at LIVE, then the apps' windows as a last message of their
own (they change with the apps, so they come after everything that stays). When that would not
fit under the high-water mark, one **compaction** renders the whole history with the ``fill``
machinery (levels, recap, pins, the latest observation whole) under the low-water mark, and
that becomes the new frame, shared by the calls that follow.

What this trades: an edit of an entry already sent (a fold into a recap, a new level, a
removal) shows at the next compaction, not at the next call; between compactions the context
uses less of the budget than ``fill`` would.

A compaction made for a call is recorded (``ContextCompacted``: the newest entry it shows and
the tokens it was rendered under), so the frame is a function of the log: ``render --at`` and
``trace`` rebuild it from the history as of that record. A restarted history store does not
rebuild it (that would cost a second replay of the log): it compacts at its first call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attrs import frozen

from livecontext.protocol.agent import RenderedSpan
from livecontext.protocol.history import ChatMessage, HistoryEntry, Level, RecapEntry, Role, Shown, id_number
from livecontext.protocol.records import ContextCompacted, RenderPolicy
from livecontext.runtime import UsageError
from livecontext.runtime.tokens import MESSAGE_OVERHEAD_TOKENS as OVERHEAD

from ._render import BudgetTooSmallError, RenderResult, render
from ._units import RenderCache, answers, unit_messages

POLICIES = ("stable", "fill")
RECAP_SHARE_FLOOR = 0.5
"""The least share of the budget a recap's derived limits are made from (see :meth:`ContextPolicy.recap_share`)."""


@frozen
class ContextPolicy:
    """How a thread's context is rendered from one call to the next (blueprint ``[context]``).

    ``stable`` (the default) keeps the prefix a provider caches: the context only grows at its
    end until the next call would pass ``high_water`` of the budget, then one compaction
    renders it down to ``low_water``. ``fill`` renders the whole budget's worth at every call:
    for a model without a prompt cache (it shows the most detail, and changes near the top
    every call).
    """

    policy: str = "stable"
    low_water: float = 0.35
    """The share of the budget a compaction renders down to: lower means fewer compactions
    (more calls share each prefix) and less detail right after one."""
    high_water: float = 1.0
    """The share of the budget past which a call compacts instead of growing the context."""

    def recap_share(self) -> float:
        """The share of the budget a recap's derived limits are made from (no ``[limits]``).

        ``fill`` renders the whole budget. A ``stable`` compaction renders the history under
        its low-water mark, so the recap folds to keep what it leaves unfolded near that size
        (the older steps at GIST then fit in a compaction: every step shown or recapped), but
        never under half the budget: below that it folds so often that rewriting the recap
        outweighs the steps in the log (measured: 2.25x the raw text a step at 0.35 of 8,000
        tokens, 1.49x at 0.5)."""
        return 1.0 if self.policy == "fill" else max(self.low_water, RECAP_SHARE_FLOOR)

    def recorded(self) -> RenderPolicy:
        """The policy as a thread records it."""
        return RenderPolicy(self.policy, self.low_water, self.high_water)

    @classmethod
    def of(cls, recorded: RenderPolicy | None) -> ContextPolicy:
        """The policy a thread recorded (``None``, a thread recorded before policies: ``fill``)."""
        if recorded is None:
            return cls("fill")
        return cls(recorded.name, recorded.low_water, recorded.high_water)

    def __attrs_post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise UsageError(f"unknown context policy {self.policy!r}: choose one of {', '.join(POLICIES)}")
        if not 0.05 <= self.low_water <= 1.0:
            raise UsageError(f"context low_water must be between 0.05 and 1 (a share of the budget), "
                             f"got {self.low_water}")
        if not self.low_water <= self.high_water <= 1.0:
            raise UsageError(f"context high_water must be between low_water ({self.low_water}) and 1, "
                             f"got {self.high_water}")


@frozen
class Frame:
    """The messages of the last compaction: sent unchanged at the head of every call until the next."""

    messages: tuple[ChatMessage, ...]
    tokens: int
    """Their cost, the tools' schemas included (as :attr:`RenderResult.tokens`)."""
    upto: str
    """The id of the newest entry they show (``""``: none)."""
    entries: int
    spans: tuple[RenderedSpan, ...]
    key: tuple[int, str, int]
    """``(budget, system prompt, tools' tokens)`` it was made for: a change of any compacts."""


@frozen
class Planned:
    """The context of a call, and the compaction it made, if it made one."""

    result: RenderResult
    compaction: tuple[ContextCompacted, Frame] | None = None
    """The record a compaction commits and the frame it makes (kept once committed: :meth:`StableRenderer.keep`)."""


class StableRenderer:
    """Renders a thread's calls under the ``stable`` policy; one per history store (it keeps
    the frame between calls). The frame is rebuilt from the log where a compaction was
    recorded (:meth:`restore`), so that ``render --at`` and ``trace`` show what was sent."""

    def __init__(self, policy: ContextPolicy) -> None:
        self.policy = policy
        self.frame: Frame | None = None
        self._grown: _Grown | None = None
        """What the previous call added to the frame (its units but the last), for the next
        call to go on from rather than make again."""
        self.compactions = 0
        """Compactions kept (made for calls, or restored from the log)."""

    def plan(self, entries: Sequence[HistoryEntry], index: dict[str, int], active: Sequence[HistoryEntry],
             recaps: Sequence[RecapEntry], budget: int, *, system_prompt: str, system_tokens: int, windows: str,
             windows_tokens: int, tools_tokens: int, pinned: Sequence[int], cache: RenderCache | None,
             count: Callable[[str], int]) -> Planned:
        """The context of the next call: the frame and what came after it, or a compaction
        (kept only once its record is committed: :meth:`keep`).

        Args:
            entries: Every entry of the thread, folded ones and recaps included, oldest first;
                ``index`` their positions by id.
            active: The unfolded entries, oldest first (recaps apart); the rest as :func:`render`.
        """
        key = (budget, system_prompt, tools_tokens)
        tail = _windows_message(windows, windows_tokens)
        tail_tokens = tail[1] if tail else 0
        frame = self.frame
        if frame is not None and frame.key == key:
            grown, self._grown = _grow(frame, entries, index, active, int(budget * self.policy.high_water) - tail_tokens,
                                       self._grown)
            if grown is not None:
                return Planned(_with_windows(grown, tail))
        try:
            target, result = _compact(active, recaps, budget, int(budget * self.policy.low_water) - tail_tokens,
                                      system_prompt=system_prompt, system_tokens=system_tokens,
                                      tools_tokens=tools_tokens, pinned=pinned, cache=cache, count=count,
                                      windows_tokens=tail_tokens)
        except BudgetTooSmallError:
            if tail is None:
                raise
            # a budget too small for the windows too: the call goes without them (as fill's does)
            tail = None
            target, result = _compact(active, recaps, budget, int(budget * self.policy.low_water),
                                      system_prompt=system_prompt, system_tokens=system_tokens,
                                      tools_tokens=tools_tokens, pinned=pinned, cache=cache, count=count,
                                      windows_tokens=0)
        upto = active[-1].id if len(active) else ""
        made = Frame(result.messages, result.tokens, upto, result.entries, result.spans, key)
        return Planned(_with_windows(result, tail), (ContextCompacted(upto, target, budget), made))

    def keep(self, frame: Frame) -> None:
        """Make ``frame`` (of a compaction whose record is committed) the head of the calls to come."""
        self.frame = frame
        self.compactions += 1

    def restore(self, record: ContextCompacted, active: Sequence[HistoryEntry], recaps: Sequence[RecapEntry], *,
                system_prompt: str, system_tokens: int, tools_tokens: int, pinned: Sequence[int],
                cache: RenderCache | None, count: Callable[[str], int]) -> None:
        """Rebuild the frame of a recorded compaction from the history as it was at its record."""
        result = render(active, recaps, record.target, system_prompt=system_prompt, system_tokens=system_tokens,
                        windows="", windows_tokens=0, tools_tokens=tools_tokens, pinned=pinned, cache=cache,
                        count=count)
        self.keep(Frame(result.messages, result.tokens, record.upto, result.entries, result.spans,
                        (record.budget, system_prompt, tools_tokens)))


def _compact(active: Sequence[HistoryEntry], recaps: Sequence[RecapEntry], budget: int, room: int, *,
             system_prompt: str, system_tokens: int, tools_tokens: int, pinned: Sequence[int],
             cache: RenderCache | None, count: Callable[[str], int], windows_tokens: int) -> tuple[int, RenderResult]:
    """The fill render of everything under ``room`` tokens, or under more if the latest
    observation at LIVE needs it (never more than the budget less the windows), and the
    tokens it was rendered under."""
    ceiling = budget - windows_tokens
    if len(active):
        latest = _latest_live_tokens(active)
        floor = system_tokens + (OVERHEAD if system_prompt else 0) + tools_tokens + latest
        # the latest observation is sent whole if the budget allows, with a quarter of the
        # budget left for the pinned task, the recap and the steps before it
        room = max(room, floor + budget // 4)
    needed = 0
    for target in dict.fromkeys((min(room, ceiling), ceiling)):  # (the whole budget if the mark is too low)
        try:
            return target, render(active, recaps, max(target, 0), system_prompt=system_prompt,
                                  system_tokens=system_tokens, windows="", windows_tokens=0,
                                  tools_tokens=tools_tokens, pinned=pinned, cache=cache, count=count)
        except BudgetTooSmallError as exc:
            needed = exc.needed + windows_tokens
    raise BudgetTooSmallError(budget, needed)


@frozen
class _Grown:
    """The units a call added to ``frame`` but its last (which the entry after it may join:
    an output and its results are one unit): made of ``entries``, these very objects."""

    frame: Frame
    entries: tuple[HistoryEntry, ...]
    messages: tuple[ChatMessage, ...]
    tokens: int
    spans: tuple[RenderedSpan, ...]


def _grow(frame: Frame, entries: Sequence[HistoryEntry], index: dict[str, int], active: Sequence[HistoryEntry],
          limit: int, kept: _Grown | None = None) -> tuple[RenderResult | None, _Grown | None]:
    """The frame with the entries appended since, each unit at LIVE (folded or not: the recap
    that stands for them is sent from the next compaction on), if that fits in ``limit``;
    ``None`` when a compaction is due. Goes on from ``kept`` (what the previous call added)
    when its entries are still the first ones since the frame (an entry edited since is a
    new object: its unit is made again); returns what the next call may go on from."""
    if frame.upto:
        at = index.get(frame.upto)
        if at is None:
            return None, None
        start = at + 1
    else:
        start = 0
    new: list[HistoryEntry] = []
    for k in range(start, len(entries)):
        entry = list.__getitem__(entries, k) if isinstance(entries, list) else entries[k]
        if isinstance(entry, RecapEntry):
            continue  # a fold: its recap shows from the next compaction on
        if not hasattr(entry, "folded"):  # (an entry still in its snapshot form: a reopened thread)
            return None, None
        new.append(entry)  # (folded since, it is still sent as it was: the recap is not sent yet)
    if not new:
        return RenderResult(frame.messages, frame.tokens, frame.entries, frame.spans), None
    if (kept is not None and kept.frame is frame and len(kept.entries) < len(new)
            and all(a is b for a, b in zip(kept.entries, new))):
        i, messages, tokens, spans = len(kept.entries), list(kept.messages), kept.tokens, list(kept.spans)
    else:
        i, messages, tokens, spans = 0, list(frame.messages), frame.tokens, list(frame.spans)
    while True:
        last = (i, len(messages), tokens, len(spans), spans[-1] if spans else None)  # (before this unit)
        if i + 1 < len(new) and answers(new[i], new[i + 1]):
            unit = new[i:i + 2]
        else:
            unit = new[i:i + 1]
        piece = unit_messages(unit, Level.LIVE)
        tokens += piece[1]
        if tokens > limit:
            return None, None
        messages += piece[0]
        _add_span(spans, unit[0].id, unit[-1].id)
        i += len(unit)
        if i >= len(new):
            break
    result = RenderResult(tuple(messages), tokens, frame.entries + len(new), tuple(spans))
    at, sent, cost, n_spans, last_span = last
    spans_before = (*spans[:n_spans - 1], last_span) if last_span is not None else ()
    return result, _Grown(frame, tuple(new[:at]), result.messages[:sent], cost, spans_before)


def _add_span(spans: list[RenderedSpan], first: str, last: str) -> None:
    if spans and spans[-1].shown is Shown.LIVE and id_number(spans[-1].last) + 1 == id_number(first):
        spans[-1] = RenderedSpan(spans[-1].first, last, Shown.LIVE)
    else:
        spans.append(RenderedSpan(first, last, Shown.LIVE))


def _latest_live_tokens(active: Sequence[HistoryEntry]) -> int:
    """What the latest unit costs at LIVE (a model output and its results are one unit)."""
    last = active[-1]
    if len(active) > 1 and answers(active[-2], last):
        return unit_messages([active[-2], last], Level.LIVE)[1]
    return unit_messages([last], Level.LIVE)[1]


def _windows_message(windows: str, windows_tokens: int) -> tuple[ChatMessage, int] | None:
    """The apps' windows as the call's last message, and its cost (``None``: no windows)."""
    if not windows:
        return None
    return ChatMessage(Role.USER, windows), windows_tokens + OVERHEAD


def _with_windows(result: RenderResult, tail: tuple[ChatMessage, int] | None) -> RenderResult:
    if tail is None:
        return result
    return RenderResult((*result.messages, tail[0]), result.tokens + tail[1], result.entries, result.spans)


def shared_prefix(previous: Sequence[ChatMessage], messages: Sequence[ChatMessage]) -> int:
    """How many leading messages of ``messages`` equal those of ``previous``."""
    n = 0
    for a, b in zip(previous, messages):
        if a is not b and a != b:
            break
        n += 1
    return n
