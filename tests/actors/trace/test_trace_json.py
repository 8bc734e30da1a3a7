"""``trace_json``: exactly the keys and types of the trace data contract, for real runs."""

from __future__ import annotations

import datetime as dt
import re
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
import trio

from livecontext.actors.trace import WindowsUnknownWarning, trace_json
from livecontext.protocol.history import EngineState
from tests.actors.trace._runs import refused_edit_run, run_blueprint, trace

V2 = Path(__file__).resolve().parents[2] / "fixtures" / "v2"

# The contract, as a small schema: a dict maps each key to its schema, a list holds one schema
# for every item, a tuple is a choice of types, ``MAP`` any string keys, ``ONE_OF`` closed values.
NUM = (int, float)


class OneOf:
    def __init__(self, *values: str) -> None:
        self.values = values


class OrNull:
    """``null``, or a value of ``schema``."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema


ROLES = OneOf("engine", "history", "apps", "input", "recap", "analyzer", "model", "agent", "system", "other")
STATES = OneOf(*(s.value for s in EngineState))
LEVELS = OneOf("live", "recent", "gist", "recap")

CONTRACT: dict[str, Any] = {
    "version": int, "thread": str, "system": (str, type(None)), "at": (int, type(None)), "last_seq": int,
    "started_at": str, "duration": NUM, "budget": int,
    "actors": [{"id": str, "role": ROLES, "label": str}],
    "messages": [{"i": int, "seq": int, "t": NUM, "from": str, "to": str, "kind": str,
                  "mode": OneOf("ask", "reply", "tell", "publish"), "summary": str, "reply_to": (int, type(None))}],
    "states": [{"state": STATES, "t0": NUM, "t1": NUM, "seq0": int, "seq1": int}],
    "model_calls": [{"n": int, "seq": int, "t": NUM, "model": str, "tokens": int, "budget": int,
                     "levels": {"live": int, "recent": int, "gist": int, "recap": int, "omitted": int},
                     "entries": [{"id": str, "level": LEVELS, "tokens": int, "text": str}], "output": str,
                     "usage": OrNull({"input_tokens": int, "cached_input_tokens": int, "output_tokens": int,
                                      "counted": bool}),
                     "sent_tokens": OrNull(int), "shared_tokens": OrNull(int)}],
    "texts": {str: str},
    "marks": [{"seq": int, "t": NUM, "type": OneOf("fold", "notification", "edit", "denial", "pause", "failure"),
               "author": str, "summary": str}],
    "counts": {"records": int, "messages": int, "model_calls": int},
}


def check(value: Any, schema: Any, where: str = "$") -> None:
    """Raise ``AssertionError`` naming the first place where ``value`` does not fit ``schema``."""
    if isinstance(schema, OrNull):
        if value is not None:
            check(value, schema.schema, where)
    elif isinstance(schema, OneOf):
        assert value in schema.values, f"{where}: {value!r} is none of {schema.values}"
    elif isinstance(schema, list):
        assert isinstance(value, list), f"{where}: a list expected, got {type(value).__name__}"
        for k, item in enumerate(value):
            check(item, schema[0], f"{where}[{k}]")
    elif isinstance(schema, dict) and list(schema) == [str]:
        assert isinstance(value, dict), f"{where}: an object expected"
        for key, item in value.items():
            check(key, str, f"{where} key")
            check(item, schema[str], f"{where}.{key}")
    elif isinstance(schema, dict):
        assert isinstance(value, dict), f"{where}: an object expected, got {type(value).__name__}"
        assert set(value) == set(schema), f"{where}: keys {sorted(value)} are not {sorted(schema)}"
        for key, item in schema.items():
            check(value[key], item, f"{where}.{key}")
    else:
        kinds = schema if isinstance(schema, tuple) else (schema,)
        assert isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds), \
            f"{where}: {value!r} is not {kinds}"


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    offline = f"sqlite:{tmp_path_factory.mktemp('o') / 'o.db'}"
    run_blueprint("offline.toml", offline)
    refused = f"jsonl:{tmp_path_factory.mktemp('r') / 'r'}"
    trio.run(refused_edit_run, refused)
    team = f"sqlite:{tmp_path_factory.mktemp('t') / 't.db'}"
    run_blueprint("team.toml", team)
    return [trace_json(trace(offline, "lake-trip")), trace_json(trace(refused, "t")),
            trace_json(trace(offline, "lake-trip", at=20)), trace_json(trace(team, None, system="team"))]


def test_a_trace_has_exactly_the_contracts_keys_and_types(traces: list[dict[str, Any]]) -> None:
    for data in traces:
        check(data, CONTRACT)
        assert data["version"] == 1
    kinds = {m["type"] for data in traces for m in data["marks"]}
    assert kinds == {"fold", "notification", "edit", "denial", "failure", "pause"}  # (every kind of mark)
    assert {a["role"] for data in traces for a in data["actors"]} >= {
        "engine", "history", "apps", "input", "recap", "analyzer", "model", "agent", "system", "other"}


def test_its_lists_are_in_log_order_and_its_references_resolve(traces: list[dict[str, Any]]) -> None:
    for data in traces:
        messages = data["messages"]
        assert [m["i"] for m in messages] == list(range(len(messages)))
        assert [(m["seq"], m["t"]) for m in messages] == sorted((m["seq"], m["t"]) for m in messages)
        for key in ("states", "marks"):
            seqs = [(x.get("seq", x.get("seq0")), x.get("t", x.get("t0"))) for x in data[key]]
            assert seqs == sorted(seqs), key
        columns = {a["id"] for a in data["actors"]}
        for m in messages:
            assert {m["from"], m["to"]} <= columns
            assert len(m["summary"]) <= 120 and "\n" not in m["summary"]
            if m["mode"] == "reply":
                asked = messages[m["reply_to"]]
                assert asked["mode"] == "ask" and asked["i"] < m["i"] and asked["to"] == m["from"]
            else:
                assert m["reply_to"] is None
        for call in data["model_calls"]:
            assert call["output"] in data["texts"] and all(e["text"] in data["texts"] for e in call["entries"])
            assert call["tokens"] == sum(call["levels"][k] for k in ("live", "recent", "gist", "recap"))
        assert data["counts"] == {"records": data["counts"]["records"], "messages": len(messages),
                                  "model_calls": len(data["model_calls"])}
        assert data["last_seq"] == max(m["seq"] for m in messages)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", data["started_at"])
        assert dt.datetime.strptime(data["started_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
        assert 0 <= min(m["t"] for m in messages) and max(m["t"] for m in messages) <= data["duration"]


def test_each_model_call_shows_the_usage_and_the_sent_and_shared_tokens_its_output_recorded(
    traces: list[dict[str, Any]],
) -> None:
    offline, _, at_20, team = traces
    for data in (offline, at_20, team):
        assert data["model_calls"]
        for call in data["model_calls"]:
            # (offline models report nothing: the rendered count is recorded as the input)
            assert call["usage"]["input_tokens"] == call["sent_tokens"] > 0
            assert call["usage"]["output_tokens"] > 0 and call["usage"]["cached_input_tokens"] == 0
            assert call["usage"]["counted"] is True
            assert 0 <= call["shared_tokens"] <= call["sent_tokens"]
    assert offline["model_calls"][0]["shared_tokens"] == 0  # (no call before the first)


def test_a_log_older_than_usage_shows_each_calls_usage_and_shares_as_unknown_not_as_zero(tmp_path: Path) -> None:
    shutil.copy(V2 / "store.db", tmp_path / "old.db")  # (written before outputs recorded usage)
    with warnings.catch_warnings():  # (its shell app may not be importable here, as another test may have made it so)
        warnings.simplefilter("ignore", WindowsUnknownWarning)
        data = trace_json(trace(f"sqlite:{tmp_path / 'old.db'}", "old"))
    check(data, CONTRACT)
    assert data["model_calls"]
    assert all((c["usage"], c["sent_tokens"], c["shared_tokens"]) == (None, None, None) for c in data["model_calls"])
