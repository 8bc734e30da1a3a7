"""Numbers in ids, how full a history is, and its size: small helpers on every step's path."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from livecontext.actors.history import HistoryLimits, HistoryState
from livecontext.protocol.history import (
    ModelInputEntry,
    ModelOutputEntry,
    Retention,
    ToolCall,
    ToolResult,
    ToolResultsEntry,
    ToolStatus,
    id_number as _number,
)
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.records import EntryAppended, ToolResultRecorded
from tests.support.agent_harness import counter


def _digits_in(ident: str) -> int:
    digits = "".join(ch for ch in ident if ch.isdigit())
    return int(digits) if digits else 0


@given(st.one_of(
    st.integers(0, 10**12).map(lambda n: f"e{n}"),
    st.integers(0, 10**6).map(lambda n: f"n{n}"),
    st.text(alphabet="e0123456789x-", max_size=8),
    st.text(st.characters(categories=("Nd", "Ll")), max_size=6),
))
def test_the_number_of_an_id_is_its_digits_read_together(ident: str) -> None:
    try:
        expected: int | type[ValueError] = _digits_in(ident)
    except ValueError:  # a digit int() does not read (no such id is ever written)
        expected = ValueError
    try:
        got: int | type[ValueError] = _number(ident)
    except ValueError:
        got = ValueError
    assert got == expected


_LIMIT = st.none() | st.integers(1, 10**6)


@given(_LIMIT, _LIMIT, _LIMIT, st.integers(0, 10**7), st.integers(0, 10**7), st.integers(0, 10**7))
def test_how_full_a_history_is_is_its_largest_ratio_or_zero(
    max_entries: int | None, max_tokens: int | None, max_bytes: int | None,
    entries: int, tokens: int, size: int,
) -> None:
    limits = HistoryLimits(max_entries=max_entries, max_tokens=max_tokens, max_bytes=max_bytes)
    ratios = [used / limit for used, limit in ((entries, max_entries), (tokens, max_tokens), (size, max_bytes))
              if limit]
    assert limits.fraction(entries, tokens, size) == max([0.0, *ratios])


@given(st.lists(st.text(max_size=30), min_size=1, max_size=6))
def test_the_active_bytes_are_the_utf8_size_of_every_active_entrys_live_text(texts: list[str]) -> None:
    surrogate_free = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
    state = HistoryState("t")
    now = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    common = dict(revision=1, author=ActorId("engine", "t"), created_at=now, retention=Retention.COMPRESSIBLE)
    seq = 0
    expected = 0
    for n, text in enumerate(surrogate_free):
        content = counter().content(text, text, text)
        calls = (ToolCall(f"c{n}", "tool", "{}"),)
        entries = [ModelInputEntry(id=f"e{3 * n + 1}", content=content, text=text or "x", **common),
                   ModelOutputEntry(id=f"e{3 * n + 2}", content=content, tool_calls=calls, **common),
                   ToolResultsEntry(id=f"e{3 * n + 3}", content=content, **common,
                                    results=(ToolResult(f"c{n}", "tool", ToolStatus.OK, content),))]
        for entry in entries:
            if isinstance(entry, ToolResultsEntry):
                seq += 1  # the result is recorded before its entry
                state.apply(seq, ToolResultRecorded(entry.results[0]))
            seq += 1
            state.apply(seq, EntryAppended(entry))
        expected += len(text.encode("utf-8")) * 4  # three entries, and the result's own text
    assert state.active_bytes == expected
