"""``livecontext trace``: what it writes, and one line on stderr for each bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.actors.trace._runs import cli, run_blueprint


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:{tmp_path_factory.mktemp('cli') / 'o.db'}"
    run_blueprint("offline.toml", url)
    return url


def test_it_writes_the_trace_as_json_or_svg_as_the_extension_says(store: str, tmp_path: Path) -> None:
    code, out, err = cli("trace", "--store", store, "--thread", "lake-trip", "-o", str(tmp_path / "t.json"))
    assert code == 0, err
    data = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert data["thread"] == "lake-trip" and data["counts"]["model_calls"] == 9
    assert out.startswith(f"wrote {tmp_path / 't.json'} (json): thread lake-trip, 40 records, ")
    code, _, err = cli("trace", "--store", store, "--thread", "lake-trip", "-o", str(tmp_path / "t.svg"))
    assert code == 0, err
    assert (tmp_path / "t.svg").read_text(encoding="utf-8").startswith('<?xml version="1.0" encoding="UTF-8"?>\n<svg')
    # --format wins over the extension
    code, _, err = cli("trace", "--store", store, "--thread", "lake-trip", "--at", "12", "--format", "JSON",
                       "-o", str(tmp_path / "t.svg"))
    assert code == 0, err
    assert json.loads((tmp_path / "t.svg").read_text(encoding="utf-8"))["last_seq"] == 12


def _one_line_error(code: int, out: str, err: str) -> str:
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("livecontext: error: "), err
    return lines[0]


BAD_INPUTS: dict[str, Callable[[str, Path], tuple[list[str], str]]] = {
    "a missing thread names the threads there are": lambda store, tmp: (
        ["--thread", "nope", "-o", str(tmp / "t.json")],
        f"thread 'nope' does not exist in {store}; its threads: lake-trip "
        f"(`livecontext threads --store {store}` lists them)"),
    "an --at past the end says the last seq": lambda store, tmp: (
        ["--thread", "lake-trip", "--at", "41", "-o", str(tmp / "t.json")],
        "--at 41 is past the end of thread lake-trip: its last seq is 40"),
    "an output in a missing folder says which": lambda store, tmp: (
        ["--thread", "lake-trip", "-o", str(tmp / "no" / "such" / "t.svg")],
        f"-o {tmp / 'no' / 'such' / 't.svg'}: the folder {tmp / 'no' / 'such'} does not exist; make it first "
        f"(mkdir -p {tmp / 'no' / 'such'}) or write elsewhere"),
    "an unknown format names the formats": lambda store, tmp: (
        ["--thread", "lake-trip", "--format", "pdf", "-o", str(tmp / "t.pdf")],
        "unknown format 'pdf': give --format html, svg or json"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_a_bad_input_is_one_line_saying_what_to_do_and_nothing_is_written(case: str, store: str,
                                                                          tmp_path: Path) -> None:
    args, said = BAD_INPUTS[case](store, tmp_path)
    line = _one_line_error(*cli("trace", "--store", store, *args))
    assert line == f"livecontext: error: {said}"
    assert list(tmp_path.iterdir()) == []


def test_a_missing_store_and_a_missing_thread_option_are_one_line_each(tmp_path: Path) -> None:
    line = _one_line_error(*cli("trace", "--store", f"sqlite:{tmp_path / 'none.db'}", "--thread", "t",
                                "-o", str(tmp_path / "t.json")))
    assert "no store at" in line and not (tmp_path / "none.db").exists()
    line = _one_line_error(*cli("trace", "--store", f"sqlite:{tmp_path / 'none.db'}", "-o", str(tmp_path / "t.json")))
    assert line == "livecontext: error: trace needs --thread T (or --system S); `livecontext threads` lists the threads"


def test_it_writes_the_page_for_html_and_for_a_path_with_no_known_extension(store: str, tmp_path: Path) -> None:
    for name in ("t.html", "trace"):
        code, out, err = cli("trace", "--store", store, "--thread", "lake-trip", "-o", str(tmp_path / name))
        assert code == 0, err
        assert out.startswith(f"wrote {tmp_path / name} (html): ")
        page = (tmp_path / name).read_text(encoding="utf-8")
        assert page.lstrip().lower().startswith("<!doctype html>") and 'id="trace-data"' in page
        assert '"thread":"lake-trip"' in page
