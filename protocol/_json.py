"""JSON text in and out, fast: the one place that picks the JSON library.

Every record the history store writes is JSON text, encoded once and checked once on the hot
path of every agent step, and orjson does both faster than the standard library. The text is
the same compact form as ``json.dumps(obj, separators=(",", ":"), ensure_ascii=False)``.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def dump_json(obj: Any) -> str:
    """``obj`` (JSON data: dicts with str keys, lists, str, int, float, bool, None) as compact text.

    Text that is not valid Unicode (a lone surrogate, as a decoder may produce from ``\\ud800``),
    an int beyond 64 bits or a non-str key is encoded as the standard library would, so the
    layer that stores it reports what is wrong. NaN and the infinities (not JSON numbers)
    become ``null``; the protocol's persisted messages hold no floats.
    """
    try:
        return orjson.dumps(obj).decode("utf-8")
    except orjson.JSONEncodeError:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def dump_standard_json(obj: Any) -> str | None:
    """``obj`` as compact standard JSON text (as :func:`dump_json`), or ``None`` when it holds
    something that does not encode cleanly (see :func:`dump_json`): text made here is valid
    UTF-8 and parses back with :func:`load_json`, so a layer that checks JSON text it is
    given can trust it unread."""
    try:
        return orjson.dumps(obj).decode("utf-8")
    except orjson.JSONEncodeError:
        return None


def load_json(text: str | bytes) -> Any:
    """Parse standard JSON text (``NaN`` and ``Infinity`` are refused; an int beyond 64 bits
    is read as a float: the protocol's messages hold none).

    Raises:
        ValueError: the text is not JSON (a :class:`json.JSONDecodeError`).
    """
    return orjson.loads(text)
