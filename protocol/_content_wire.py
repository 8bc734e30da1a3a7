"""How an entry's :class:`Content` is written: each text once.

The three levels of an entry often repeat each other: a short tool output is its own RECENT,
a one-line answer its own GIST, and a long output's RECENT is its head and tail lines (see
``livecontext.actors.history._lod``). Since schema version 2, a level is written as:

- ``"live"`` (or, for GIST, ``"recent"``): the string naming the level it equals, text and
  token count alike;
- ``{"head": H, "text": T, "tail": L, "tokens": N}``: LIVE's first ``H`` characters, then
  ``T``, then LIVE's last ``L`` characters (``head`` or ``tail`` left out when 0), written
  when the two share at least :data:`SHARED_MIN` characters that way;
- ``{"text": T, "tokens": N}``: the text itself, as version 1 wrote every level.

Characters are Unicode code points (Python's ``str`` indices). LIVE is always written out.
Reading accepts every form, so contents written by version 1 read as they always did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._content import Content, LevelText
from ._errors import MalformedDataError

SHARED_MIN = 32
"""The fewest characters a level must share with LIVE (as head plus tail) to be written as a
part of it: below that, the keys cost about what they save."""


def unstructure_content(content: Content) -> dict[str, Any]:
    """``content`` as JSON-safe data, each level that repeats another written as a reference."""
    live, recent, gist = content.live, content.recent, content.gist
    live_text = live.text
    if recent is live or recent == live:
        recent_data: Any = "live"
    else:
        recent_data = _against_live(recent, live_text)
    if gist is live or gist == live:
        gist_data: Any = "live"
    elif gist is recent or gist == recent:
        gist_data = "recent"
    else:
        gist_data = _against_live(gist, live_text)
    return {"live": {"text": live_text, "tokens": live.tokens}, "recent": recent_data, "gist": gist_data}


def _against_live(level: LevelText, live: str) -> dict[str, Any]:
    """``level`` as LIVE's head, its own middle and LIVE's tail, or as its whole text."""
    text = level.text
    half = SHARED_MIN // 2
    # (a level sharing less than half the minimum at each end shares less than the minimum:
    # the common case of a GIST, decided by two short comparisons)
    if len(text) < SHARED_MIN or (text[:half] != live[:half] and text[-half:] != live[-half:]):
        return {"text": text, "tokens": level.tokens}
    head = common_prefix(text, live)
    tail = common_suffix(text, live, min(len(text), len(live)) - head)
    if head + tail < SHARED_MIN:
        return {"text": text, "tokens": level.tokens}
    data: dict[str, Any] = {}
    if head:
        data["head"] = head
    data["text"] = text[head : len(text) - tail]
    if tail:
        data["tail"] = tail
    data["tokens"] = level.tokens
    return data


def common_prefix(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share at their start.

    Compared a slice at a time (each comparison runs in C; a loop over characters would
    not): slices twice as long each time while they match, then halved within the first
    that does not.
    """
    n = min(len(a), len(b))
    low, step = 0, 64
    while True:  # a[:low] == b[:low]
        high = min(low + step, n)
        if a[low:high] != b[low:high]:
            break
        if high == n:
            return n
        low, step = high, step * 2
    high -= 1  # (a[:high + 1] != b[:high + 1])
    while low < high:
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def common_suffix(a: str, b: str, limit: int) -> int:
    """How many characters (at most ``limit``) ``a`` and ``b`` share at their end (as
    :func:`common_prefix` finds it, from the end)."""
    la, lb = len(a), len(b)
    low, step = 0, 64
    while True:  # the last low characters match
        if low >= limit:
            return limit
        high = min(low + step, limit)
        if a[la - high : la - low] != b[lb - high : lb - low]:
            break
        low, step = high, step * 2
    high -= 1
    while low < high:
        mid = (low + high + 1) // 2
        if a[la - mid : la - low] == b[lb - mid : lb - low]:
            low = mid
        else:
            high = mid - 1
    return low


def structure_content(data: Any, level_text: Callable[[Any], LevelText],
                      count: Callable[[Any, str], int]) -> Content:
    """A :class:`Content` from data in any of the forms above.

    ``level_text`` structures a plain ``{"text", "tokens"}`` object; ``count`` checks a
    ``head``/``tail`` count (a non-negative integer) and returns it.

    Raises:
        MalformedDataError: the data has none of those forms, names an unknown level, or
            takes more of LIVE than LIVE holds.
    """
    if not isinstance(data, dict):
        raise MalformedDataError("Content", f"expected a JSON object, got {type(data).__name__}")
    for key in ("live", "recent", "gist"):
        if key not in data:
            raise MalformedDataError("Content", f"the level {key!r} is missing")
    if not isinstance(data["live"], dict) or "head" in data["live"] or "tail" in data["live"]:
        raise MalformedDataError(
            "Content", f"the level 'live' must be written out as {{\"text\": ..., \"tokens\": ...}}, got {data['live']!r}")
    live = level_text(data["live"])
    recent = _level(data["recent"], "recent", live, None, level_text, count)
    gist = _level(data["gist"], "gist", live, recent, level_text, count)
    return Content(live, recent, gist)


def _level(data: Any, name: str, live: LevelText, recent: LevelText | None,
           level_text: Callable[[Any], LevelText], count: Callable[[Any, str], int]) -> LevelText:
    if isinstance(data, str):
        if data == "live":
            return live
        if data == "recent" and recent is not None:
            return recent
        allowed = "'live'" if recent is None else "'live' or 'recent'"
        raise MalformedDataError("Content", f"the level {name!r} refers to {data!r}; it may refer to {allowed}")
    if isinstance(data, dict) and ("head" in data or "tail" in data):
        head = count(data.get("head", 0), f"{name}.head")
        tail = count(data.get("tail", 0), f"{name}.tail")
        whole = live.text
        if head + tail > len(whole):
            raise MalformedDataError(
                "Content", f"the level {name!r} takes {head} + {tail} characters of LIVE, which has {len(whole)}")
        middle = level_text({k: v for k, v in data.items() if k not in ("head", "tail")})
        return LevelText(whole[:head] + middle.text + whole[len(whole) - tail :], middle.tokens)
    return level_text(data)
