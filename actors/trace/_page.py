"""The trace page: one self-contained HTML document drawn from the trace data (issue 18).

The page's code lives beside this module as real files, ``page/trace.html`` (the template),
``page/trace.css`` and ``page/trace.js``; :func:`render_page` inlines them and the data, so
the document needs no network when it is opened: nothing in it points outside, and the
template's Content-Security-Policy forbids every fetch, so a slip would show as a console
error rather than as a silent request.
"""

from __future__ import annotations

import functools
import html
import json
import re
from importlib.resources import files
from typing import Any

PAGE_DATA_VERSION = 1
"""The version of the trace data contract this page reads (the data's ``"version"``)."""

_PACKAGE = __name__.rpartition(".")[0]
_PLACEHOLDER = re.compile(r"\{\{(TITLE|CSS|JS|DATA)\}\}")


@functools.cache
def _sources() -> dict[str, str]:
    """The template, style sheet and script shipped in the package's ``page`` folder."""
    folder = files(_PACKAGE).joinpath("page")
    return {name: folder.joinpath(f"trace.{suffix}").read_text(encoding="utf-8")
            for name, suffix in (("HTML", "html"), ("CSS", "css"), ("JS", "js"))}


def embed_json(data: dict[str, Any]) -> str:
    """``data`` as JSON text that can sit inside a ``<script>`` element.

    ``"</"`` becomes ``"<\\/"`` so no text closes the element early (``</script>`` in a model's
    output), and ``"<!--"`` becomes ``"<\\u0021--"`` so none puts the HTML parser in the
    script's "escaped" state, where a later ``</script>`` would be missed; both are JSON
    escapes, so ``JSON.parse`` gives back the same strings.

    Raises:
        ValueError: ``data`` holds NaN or an infinity, which JSON cannot carry.
    """
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:
        raise ValueError(f"the trace data holds a number JSON cannot carry ({exc}): "
                         "make every time and count finite") from None
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def render_page(data: dict[str, Any]) -> str:
    """One HTML document showing the trace ``data`` (the contract's JSON object, version 1).

    The document holds its style sheet, its script and the data inline and loads nothing:
    write it to a file and open it in any browser, offline.

    Args:
        data: the trace as ``trace_json`` returns it.

    Returns:
        The HTML text.

    Raises:
        ValueError: ``data`` is of another contract version, or holds a number JSON cannot
            carry.
    """
    version = data.get("version")
    if version != PAGE_DATA_VERSION:
        raise ValueError(f"trace data version {version!r}: this page reads version {PAGE_DATA_VERSION}; "
                         "build the trace with the same livecontext that renders it")
    title = f"livecontext trace · {data.get('thread', '?')}"
    if data.get("system"):
        title += f" · system {data['system']}"
    sources = _sources()
    values = {"TITLE": html.escape(title), "CSS": sources["CSS"], "JS": sources["JS"], "DATA": embed_json(data)}
    # one pass over the template: text put in (the data above all) is never searched again
    return _PLACEHOLDER.sub(lambda found: values[found.group(1)], sources["HTML"])
