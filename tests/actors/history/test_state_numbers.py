"""Numbers in ids and how full a history is: small helpers on every step's path."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from livecontext.actors.history import HistoryLimits
from livecontext.actors.history._state import _number


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
