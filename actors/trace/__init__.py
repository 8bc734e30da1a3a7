"""Traces: a thread's log drawn as actors and the messages between them (``livecontext trace``).

:func:`build_trace` reads a thread (or one agent of a system) from a store and replays it with
the history store's own code: who sent what to whom and when, the engine's states, what each
model call was sent at which level, and the folds, notifications, edits, denials, pauses and
failures, with their authors. :func:`trace_json` gives it as the JSON the trace page reads
(``_page.render_page`` fills the page in: ``page/`` holds its HTML, CSS and script);
:func:`trace_svg` draws its sequence diagram as one SVG.
"""

from __future__ import annotations

from ._build import build_trace
from ._json import TRACE_VERSION, trace_json
from ._model import (
    ActorRole,
    CallUsage,
    ContextEntry,
    LevelTokens,
    Mark,
    MarkType,
    MessageMode,
    ModelCall,
    StateSpan,
    Trace,
    TraceActor,
    TraceMessage,
)
from ._page import render_page
from ._svg import trace_svg
from ._reading import SeqPastEndError, ThreadMissingError, TraceError
from ._windows import WindowsRecordedWarning, WindowsUnknownWarning

__all__ = [
    "TRACE_VERSION",
    "ActorRole",
    "CallUsage",
    "ContextEntry",
    "LevelTokens",
    "Mark",
    "MarkType",
    "MessageMode",
    "ModelCall",
    "SeqPastEndError",
    "StateSpan",
    "ThreadMissingError",
    "Trace",
    "TraceActor",
    "TraceError",
    "TraceMessage",
    "WindowsRecordedWarning",
    "WindowsUnknownWarning",
    "build_trace",
    "render_page",
    "trace_json",
    "trace_svg",
]
