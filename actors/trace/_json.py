"""A trace as the JSON object the page and other tools read (the trace data contract,
version :data:`TRACE_VERSION`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ._model import Trace

TRACE_VERSION = 1
"""The version of the JSON :func:`trace_json` writes; a reader refuses others."""


def trace_json(trace: Trace) -> dict[str, Any]:
    """``trace`` as JSON data: the keys and types of the trace data contract, lists in the
    order of the log (by seq, then time)."""
    return {
        "version": TRACE_VERSION,
        "thread": trace.thread,
        "system": trace.system,
        "at": trace.at,
        "last_seq": trace.last_seq,
        "started_at": utc_text(trace.started_at),
        "duration": trace.duration,
        "budget": trace.budget,
        "actors": [{"id": a.id, "role": a.role.value, "label": a.label} for a in trace.actors],
        "messages": [{"i": m.i, "seq": m.seq, "t": m.t, "from": m.sender, "to": m.receiver, "kind": m.kind,
                      "mode": m.mode.value, "summary": m.summary, "reply_to": m.reply_to} for m in trace.messages],
        "states": [{"state": s.state.value, "t0": s.t0, "t1": s.t1, "seq0": s.seq0, "seq1": s.seq1}
                   for s in trace.states],
        "model_calls": [{
            "n": c.n, "seq": c.seq, "t": c.t, "model": c.model, "tokens": c.tokens, "budget": c.budget,
            "levels": {"live": c.levels.live, "recent": c.levels.recent, "gist": c.levels.gist,
                       "recap": c.levels.recap, "omitted": c.levels.omitted},
            "entries": [{"id": e.id, "level": e.level, "tokens": e.tokens, "text": e.text} for e in c.entries],
            "output": c.output,
            "usage": None if c.usage is None else {
                "input_tokens": c.usage.input_tokens, "cached_input_tokens": c.usage.cached_input_tokens,
                "output_tokens": c.usage.output_tokens, "counted": c.usage.counted},
            "sent_tokens": c.sent_tokens, "shared_tokens": c.shared_tokens,
        } for c in trace.model_calls],
        "texts": dict(trace.texts),
        "marks": [{"seq": k.seq, "t": k.t, "type": k.type.value, "author": k.author, "summary": k.summary}
                  for k in trace.marks],
        "counts": {"records": trace.records, "messages": len(trace.messages), "model_calls": len(trace.model_calls)},
    }


def utc_text(when: dt.datetime) -> str:
    """``2026-11-26T21:00:00.000000Z``: a UTC time as the contract writes it."""
    return when.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
