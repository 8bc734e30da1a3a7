"""An entry's levels are written once each: references to an equal level, parts of LIVE."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livecontext.protocol.history import Content, HistoryEntry, LevelText, ModelInputEntry, Retention
from livecontext.protocol.kernel import ActorId
from livecontext.protocol.wire import MalformedDataError, make_converter
from livecontext.protocol._content_wire import SHARED_MIN

_TEXTS = st.text(alphabet=st.sampled_from("ab\n é✓"), max_size=80)
_TOKENS = st.integers(min_value=0, max_value=500)


@st.composite
def contents(draw: st.DrawFn) -> Content:
    """Contents whose levels are often equal, often LIVE's head and tail around a marker,
    sometimes unrelated, and sometimes equal in text but not in tokens."""
    live = LevelText(draw(_TEXTS), draw(_TOKENS))

    def level(*equal_to: LevelText) -> LevelText:
        how = draw(st.sampled_from(["same", "excerpt", "other", "same text"]))
        if how == "same":
            return draw(st.sampled_from(equal_to))
        if how == "excerpt":
            cut = sorted(draw(st.lists(st.integers(0, len(live.text)), min_size=2, max_size=2)))
            return LevelText(live.text[: cut[0]] + draw(_TEXTS) + live.text[cut[1]:], draw(_TOKENS))
        if how == "same text":
            return LevelText(draw(st.sampled_from(equal_to)).text, draw(_TOKENS))
        return LevelText(draw(_TEXTS), draw(_TOKENS))

    recent = level(live)
    return Content(live, recent, level(live, recent))


@settings(max_examples=400, deadline=None)
@given(contents())
def test_every_content_round_trips_through_json(content: Content) -> None:
    converter = make_converter()
    wire = json.loads(json.dumps(converter.unstructure(content, Content)))
    assert converter.structure(wire, Content) == content


@settings(max_examples=200, deadline=None)
@given(contents())
def test_a_level_equal_to_a_higher_one_is_written_as_its_name_and_read_back_as_that_very_level(
        content: Content) -> None:
    converter = make_converter()
    wire = converter.unstructure(content, Content)
    assert wire["live"] == {"text": content.live.text, "tokens": content.live.tokens}
    assert (wire["recent"] == "live") == (content.recent == content.live)
    assert (wire["gist"] == "live") == (content.gist == content.live)
    assert (wire["gist"] == "recent") == (content.gist == content.recent != content.live)
    back = converter.structure(wire, Content)
    if content.recent == content.live:
        assert back.recent is back.live  # shared, as TokenCounter.content shares them
    if content.gist == content.recent:
        assert back.gist is back.recent


def test_a_recent_level_made_of_lives_head_and_tail_stores_only_its_middle() -> None:
    live = "\n".join(f"line {n}: some output of the tool" for n in range(40))
    lines = live.splitlines()
    recent = "\n".join([*lines[:5], "… [30 lines elided] …", *lines[-5:]])
    content = Content(LevelText(live, 400), LevelText(recent, 90), LevelText("tool ok, 40 lines", 6))
    wire = make_converter().unstructure(content, Content)
    head = len("\n".join(lines[:5])) + 1
    tail = len("\n".join(lines[-5:])) + 1
    assert wire["recent"] == {"head": head, "text": "… [30 lines elided] …", "tail": tail, "tokens": 90}
    assert wire["gist"] == {"text": "tool ok, 40 lines", "tokens": 6}
    assert make_converter().structure(wire, Content) == content


def test_a_level_sharing_less_than_the_minimum_with_live_is_written_whole() -> None:
    live = "x" * (SHARED_MIN - 1) + "the rest of it"
    short = LevelText("x" * (SHARED_MIN - 1) + "!", 3)
    shared = LevelText("x" * SHARED_MIN + "!", 3)
    converter = make_converter()
    assert converter.unstructure(Content(LevelText(live, 9), short, short), Content)["recent"] == {
        "text": short.text, "tokens": 3}
    wire = converter.unstructure(Content(LevelText("x" + live, 9), shared, shared), Content)
    assert wire["recent"] == {"head": SHARED_MIN, "text": "!", "tokens": 3} and wire["gist"] == "recent"


def test_a_content_written_by_version_1_reads_as_it_was_written() -> None:
    v1 = {"live": {"text": "hello", "tokens": 1}, "recent": {"text": "hello", "tokens": 1},
          "gist": {"text": "hi", "tokens": 1}}
    content = make_converter().structure(v1, Content)
    assert content == Content(LevelText("hello", 1), LevelText("hello", 1), LevelText("hi", 1))


def test_an_entry_is_written_with_its_levels_as_references() -> None:
    hi = LevelText("hi", 1)
    entry = ModelInputEntry(id="e1", revision=1, author=ActorId("user", "me"),
                            created_at=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
                            retention=Retention.COMPRESSIBLE, content=Content(hi, hi, hi), text="hi")
    converter = make_converter()
    wire = converter.unstructure(entry)
    assert wire["content"] == {"live": {"text": "hi", "tokens": 1}, "recent": "live", "gist": "live"}
    assert converter.structure(wire, HistoryEntry) == entry  # type: ignore[arg-type]


@pytest.mark.parametrize(("data", "message"), [
    ({"live": {"text": "a", "tokens": 1}, "recent": "gist", "gist": "live"},
     "the level 'recent' refers to 'gist'; it may refer to 'live'"),
    ({"live": {"text": "a", "tokens": 1}, "recent": "live", "gist": "LIVE"},
     "the level 'gist' refers to 'LIVE'; it may refer to 'live' or 'recent'"),
    ({"live": {"text": "abc", "tokens": 1}, "recent": {"head": 2, "tail": 2, "text": "", "tokens": 1}, "gist": "live"},
     "the level 'recent' takes 2 \\+ 2 characters of LIVE, which has 3"),
    ({"live": {"text": "abc", "tokens": 1}, "recent": {"head": -1, "text": "", "tokens": 1}, "gist": "live"},
     "recent.head must be a count of characters \\(an integer >= 0\\), got -1"),
    ({"live": {"text": "abc", "tokens": 1}, "recent": {"tail": True, "text": "", "tokens": 1}, "gist": "live"},
     "recent.tail must be a count of characters \\(an integer >= 0\\), got True"),
    ({"live": {"text": "abc", "tokens": 1}, "gist": "live"}, "the level 'recent' is missing"),
    ({"live": "recent", "recent": "live", "gist": "live"},
     "the level 'live' must be written out as {\"text\": ..., \"tokens\": ...}, got 'recent'"),
    ({"live": {"head": 1, "text": "a", "tokens": 1}, "recent": "live", "gist": "live"},
     "the level 'live' must be written out"),
    ({"live": {"text": "a", "tokens": 1}, "recent": {"head": 0, "text": 5, "tokens": 1}, "gist": "live"},
     "expected a string, got 5"),
    (["live"], "expected a JSON object, got list"),
])
def test_a_malformed_content_is_refused_saying_what_is_wrong(data: Any, message: str) -> None:
    with pytest.raises(MalformedDataError, match=message):
        make_converter().structure(data, Content)
