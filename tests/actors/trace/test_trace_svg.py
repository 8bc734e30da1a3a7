"""``trace --format svg``: the sequence diagram alone, as one standalone SVG."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from livecontext.actors.trace import trace_json, trace_svg
from tests.support.trace_threads import make_long_thread
from tests.actors.trace._runs import cli, run_blueprint, trace

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:{tmp_path_factory.mktemp('svg') / 'o.db'}"
    run_blueprint("offline.toml", url)
    return url


def _texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_it_is_xml_naming_every_actor_with_its_arrows_and_marks(store: str, tmp_path: Path) -> None:
    code, _, err = cli("trace", "--store", store, "--thread", "lake-trip", "-o", str(tmp_path / "t.svg"))
    assert code == 0, err
    root = ET.parse(tmp_path / "t.svg").getroot()
    assert root.tag == f"{SVG}svg" and int(root.get("width", "0")) > 0
    texts = _texts(root)
    data = trace_json(trace(store, "lake-trip"))
    for actor in data["actors"]:
        assert actor["label"] in texts, actor
    assert {"AppendInput", "ModelRequest", "FoldIntoRecap", "PostNotification"} <= set(texts)
    folds = [t for t in texts if t.startswith("fold by recap: folded ")]
    assert len(folds) == sum(1 for m in data["marks"] if m["type"] == "fold")
    arrows = [line for g in root.iter(f"{SVG}g") for line in g.iter(f"{SVG}line")]
    replies = [line for line in arrows if line.get("stroke-dasharray") == "5 3"]
    assert len(replies) == sum(1 for m in data["messages"] if m["mode"] == "reply")  # (dashed, one each)
    assert not any("left out" in t for t in texts)  # (a short run is drawn whole)


def test_two_runs_write_the_same_bytes(store: str, tmp_path: Path) -> None:
    for name in ("a.svg", "b.svg"):
        code, _, err = cli("trace", "--store", store, "--thread", "lake-trip", "-o", str(tmp_path / name))
        assert code == 0, err
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()


def test_a_long_trace_is_cut_in_the_middle_and_says_how_much_was_left_out(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'long.db'}"
    records = make_long_thread(url, 400)
    data = trace_json(trace(url, "long"))
    assert data["counts"]["records"] == records and data["counts"]["messages"] > 1000
    root = ET.fromstring(trace_svg(data))
    texts = _texts(root)
    said = [t for t in texts if "messages are left out here" in t]
    gap = [t for t in texts if t.startswith("… ") and "messages left out here (seq " in t]
    assert len(said) == 1 and len(gap) == 1
    left_out = int(said[0].split(" of ")[0].replace(",", ""))
    drawn = sum(1 for g in root.iter(f"{SVG}g") for title in g.iter(f"{SVG}title")
                for line in (title.text or "").splitlines() if line.startswith("#"))
    assert drawn + left_out == data["counts"]["messages"]
    assert gap[0].startswith(f"… {left_out:,} messages left out here")


def test_text_that_xml_cannot_hold_is_replaced_not_written(store: str) -> None:
    data = trace_json(trace(store, "lake-trip"))
    data["messages"][0]["kind"] = "Odd\x00\x07Kind"
    data["actors"][0]["label"] = "in<put> & \"more\""
    root = ET.fromstring(trace_svg(data))
    assert "Odd\ufffd\ufffdKind" in _texts(root) and "in<put> & \"more\"" in _texts(root)
