"""The trace page (issue 18), as written and as a real headless browser shows it.

The page is one HTML document that needs no network; in chromium it loads without a console
error, shows every actor and engine state of the trace, opens a model call's context on a
click, filters the sequence diagram by search, actor, kind and time, and draws a thread of
20,000 records within 3 s. The traces are made up (``_synthetic.py``) in the contract's shape.
"""

from __future__ import annotations

import json
import math
import re
import struct
import zlib
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from livecontext.actors.trace._page import render_page
from tests.actors.trace._synthetic import MARK_TYPES, MODES, NASTY_TEXTS, ROLES, STATES, empty_trace, one_actor_trace, synthetic_trace

if TYPE_CHECKING:
    from tests.actors.trace.conftest import TracePage

NEEDLE = "needle-Ωmega"
"""A word in exactly one message's summary of :func:`trace`."""


@pytest.fixture(scope="module")
def trace() -> dict[str, Any]:
    """A thread of about 300 records with every role, state, mode and mark type."""
    return synthetic_trace(300, seed=7, agents=2, needle=NEEDLE)


def rows_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The diagram's rows as the contract orders them: messages and marks by seq, a mark
    after the messages of its seq."""
    return sorted([*({**m, "_mark": False} for m in data["messages"]), *({**k, "_mark": True} for k in data["marks"])],
                  key=lambda row: (row["seq"], row["_mark"]))


def searchable(row: dict[str, Any]) -> str:
    """The text the search box looks in."""
    if row["_mark"]:
        return f"{row['type']}\n{row['summary']}\n{row['author']}".lower()
    return f"{row['kind']}\n{row['summary']}".lower()


def shown(page: TracePage) -> dict[str, int]:
    """The shown-count's figures: rows and messages shown, rows in all."""
    (count,) = page.testid("shown-count")
    return {name: int(count.get_attribute(f"data-{name}")) for name in ("shown", "messages", "total")}


def drawn_rows(page: TracePage) -> list[dict[str, Any]]:
    """The rows of the diagram in the DOM now (only those near the view are)."""
    return page.js("""return [...document.querySelectorAll('#diagram-svg [data-r]:not(.grow)')].map(g => ({
        seq: Number(g.dataset.seq), i: g.dataset.i === undefined ? null : Number(g.dataset.i),
        type: g.dataset.type || null, text: g.textContent}))""")


def test_the_synthetic_trace_has_every_role_state_mode_and_mark_type_in_contract_order(trace: dict[str, Any]) -> None:
    assert {a["role"] for a in trace["actors"]} == set(ROLES)
    assert {s["state"] for s in trace["states"]} == set(STATES)
    assert {m["mode"] for m in trace["messages"]} == set(MODES)
    assert {k["type"] for k in trace["marks"]} == set(MARK_TYPES)
    for items in (trace["messages"], trace["marks"], trace["model_calls"], trace["states"]):
        keys = [(item.get("seq", item.get("seq0")), item.get("t", item.get("t0"))) for item in items]
        assert keys == sorted(keys)
    by_i = {m["i"]: m for m in trace["messages"]}
    assert all(by_i[m["reply_to"]]["mode"] == "ask" for m in trace["messages"] if m["mode"] == "reply")
    assert all(e["text"] in trace["texts"] for call in trace["model_calls"] for e in call["entries"])


# ------------------------------------------------------------------ the document itself


class _Document(HTMLParser):
    """The tags' attributes, and the text of the data script, of an HTML document."""

    def __init__(self) -> None:
        super().__init__()
        self.attributes: list[tuple[str, str, str]] = []
        self.data_script: list[str] = []
        self._in_data = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attributes += [(tag, name, value or "") for name, value in attrs]
        self._in_data = tag == "script" and ("id", "trace-data") in attrs

    def handle_endtag(self, tag: str) -> None:
        self._in_data = False

    def handle_data(self, data: str) -> None:
        if self._in_data:
            self.data_script.append(data)


def test_the_document_points_at_nothing_outside_itself(trace: dict[str, Any]) -> None:
    text = render_page(trace)
    document = _Document()
    document.feed(text)
    linked = [(tag, name, value) for tag, name, value in document.attributes
              if name in ("src", "href", "action", "poster", "srcset", "data", "formaction")]
    assert [link for link in linked if not link[2].startswith("data:")] == []
    assert not re.search(r"@import|url\(\s*['\"]?(https?:)?//", text)
    policy = [value for tag, name, value in document.attributes if tag == "meta" and name == "content" and "default-src" in value]
    assert policy and "default-src 'none'" in policy[0], "the page must forbid every fetch"


def test_the_data_script_gives_back_the_data_even_with_script_tags_in_its_texts(trace: dict[str, Any]) -> None:
    data = one_actor_trace()
    assert any("</script>" in text for text in data["texts"].values())
    document = _Document()
    document.feed(render_page(data))
    (embedded,) = document.data_script
    assert "</" not in embedded and "<!--" not in embedded
    assert json.loads(embedded) == data


def test_a_trace_of_another_contract_version_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^trace data version 2: this page reads version 1; [^\n]+$"):
        render_page({**empty_trace(), "version": 2})


def test_a_trace_holding_nan_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^the trace data holds a number JSON cannot carry .*finite$"):
        render_page({**empty_trace(), "duration": float("nan")})


# ------------------------------------------------------------------ in the browser


def test_the_page_loads_without_a_console_error_or_a_network_request(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    logs = page.logs()
    assert [entry for entry in logs["browser"] if entry["level"] == "SEVERE"] == []
    requested = [event["params"]["request"]["url"] for event in logs["network"]]
    assert page.url in requested, "the performance log must see the page itself, or this check sees nothing"
    by_page = [event["params"]["request"]["url"] for event in logs["network"] if event["params"].get("documentURL") == page.url]
    assert [url for url in by_page if url != page.url and not url.startswith("data:")] == []
    # (the browser's own pages fetch chrome:// resources; nothing may go out on the network)
    assert [url for url in requested if url.split(":", 1)[0] in ("http", "https", "ws", "wss", "ftp")] == []
    assert page.js("return performance.getEntriesByType('resource').length") == 0
    # the texts' markup stayed text
    assert page.js("return [document.querySelectorAll('img').length, window.pwned === undefined, document.title]") == [
        0, True, "livecontext trace · main · system team"]


def test_the_browser_reads_back_the_embedded_data_unchanged(page: TracePage) -> None:
    data = one_actor_trace()
    page.open(data)
    assert page.js("return JSON.parse(document.getElementById('trace-data').textContent)") == data


def test_the_header_shows_the_thread_seq_range_duration_and_counts(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    (title,) = page.css("#trace-title")
    assert title.text == "Trace of thread main · system team"
    stats = {element.get_attribute("data-testid"): element.text for element in page.css("#trace-stats .stat")}
    assert stats["stat-seq"] == f"seq {trace['messages'][0]['seq']}–{trace['last_seq']}"
    assert stats["stat-records"] == f"records {trace['counts']['records']:,}"
    assert stats["stat-messages"] == f"messages {len(trace['messages']):,}"
    assert stats["stat-model-calls"] == f"model calls {len(trace['model_calls']):,}"
    assert stats["stat-marks"] == f"marks {len(trace['marks']):,}"
    assert 60 <= trace["duration"] < 3600
    minutes, seconds = divmod(int(trace["duration"]), 60)
    assert stats["stat-duration"] == f"duration {minutes} min {seconds} s"


def test_every_actor_of_the_trace_has_a_column_in_the_traces_order(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    heads = sorted(page.testid("actor"), key=lambda head: head.rect["x"])
    assert [head.get_attribute("data-actor") for head in heads] == [actor["id"] for actor in trace["actors"]]
    assert [head.get_attribute("data-role") for head in heads] == [actor["role"] for actor in trace["actors"]]
    labels = [head.get_attribute("textContent") for head in heads]
    assert labels == [actor["label"] + actor["role"] for actor in trace["actors"]]


def test_every_state_the_engine_went_through_is_listed_with_its_count_and_time(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    items = {item.get_attribute("data-state"): item for item in page.testid("state-legend-item")}
    assert list(items) == list(STATES)
    for state in STATES:
        spans = [s for s in trace["states"] if s["state"] == state]
        assert spans, f"the synthetic trace must go through {state}"
        assert int(items[state].get_attribute("data-count")) == len(spans)
        assert float(items[state].get_attribute("data-seconds")) == pytest.approx(sum(s["t1"] - s["t0"] for s in spans))
        assert "absent" not in items[state].get_attribute("class")


def test_a_state_the_engine_never_went_through_is_shown_as_absent(page: TracePage) -> None:
    page.open(one_actor_trace())
    absent = {item.get_attribute("data-state") for item in page.testid("state-legend-item")
              if "absent" in item.get_attribute("class")}
    assert absent == set(STATES) - {"PendingInput"}


def click_timeline(page: TracePage, t: float, lane: str) -> None:
    """Click the timeline at time ``t`` in ``lane`` ("state", "marks" or "calls"), by the
    scale the canvas publishes."""
    (canvas,) = page.testid("timeline-canvas")
    scale = json.loads(canvas.get_attribute("data-scale"))
    x = scale["left"] + (t - scale["view0"]) / (scale["view1"] - scale["view0"]) * (scale["right"] - scale["left"])
    y = sum(scale[lane]) / 2
    size = canvas.size
    ActionChains(page.driver).move_to_element_with_offset(canvas, x - size["width"] / 2, y - size["height"] / 2).click().perform()


def test_the_state_band_paints_each_state_in_its_legend_colour_at_its_time(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    (canvas,) = page.testid("timeline-canvas")
    scale = json.loads(canvas.get_attribute("data-scale"))
    per_second = (scale["right"] - scale["left"]) / (scale["view1"] - scale["view0"])
    colours = page.js("""return Object.fromEntries([...document.querySelectorAll('[data-testid=state-legend-item]')].map(item =>
        [item.dataset.state, getComputedStyle(item.querySelector('.swatch')).backgroundColor.match(/\\d+/g).map(Number)]))""")
    checked = 0
    for span in trace["states"]:
        if (span["t1"] - span["t0"]) * per_second < 4:
            continue  # narrower than a few pixels: its neighbours share them
        x = scale["left"] + ((span["t0"] + span["t1"]) / 2 - scale["view0"]) * per_second
        pixel = page.js("""const c = arguments[0], r = devicePixelRatio;
            return [...c.getContext('2d').getImageData(Math.round(arguments[1] * r), Math.round(arguments[2] * r), 1, 1).data]""",
                        canvas, x, sum(scale["state"]) / 2)
        assert pixel[:3] == colours[span["state"]], f"{span['state']} at {span['t0']:.3f} s is painted {pixel}"
        checked += 1
    assert checked > len(trace["states"]) / 3


def test_a_click_on_the_state_band_shows_that_state_with_its_start_end_and_duration(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    longest = max(trace["states"], key=lambda s: s["t1"] - s["t0"])
    click_timeline(page, (longest["t0"] + longest["t1"]) / 2, "state")
    details = page.testid("details")[0].text
    assert f"Engine state {longest['state']}" in details
    assert f"start\n{longest['t0']:.3f} s" in details and f"end\n{longest['t1']:.3f} s" in details
    assert f"seq\n{longest['seq0']} – {longest['seq1']}" in details
    assert page.testid("detail-duration")[0].text.endswith(" s")


def test_a_click_on_a_mark_of_the_timeline_shows_the_mark_and_its_author(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    denial = next(k for k in trace["marks"] if k["type"] == "denial")
    click_timeline(page, denial["t"], "marks")
    details = page.testid("details")[0].text
    assert "Mark: denial" in details and denial["summary"] in details
    assert denial["author"] in details


def test_a_click_on_a_model_call_shows_the_context_it_was_given_and_its_output(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    listed = {int(row.get_attribute("data-n")): row for row in page.testid("model-call")}
    n = max((n for n in listed if n < 4), key=lambda n: len(trace["model_calls"][n]["entries"]))
    call = trace["model_calls"][n]
    listed[n].click()
    assert page.testid("call-title")[0].text == f"Model call #{call['n']}"
    entries = page.js("""return [...document.querySelectorAll('[data-testid=context-entry]')].map(e => [
        e.dataset.id, e.dataset.level, e.querySelector('[data-testid=context-text]').textContent])""")
    assert entries == [[e["id"], e["level"], trace["texts"][e["text"]]] for e in call["entries"]]
    assert page.testid("context-output")[0].get_attribute("textContent") == trace["texts"][call["output"]]
    assert f"{call['tokens']:,} of {call['budget']:,}" in page.testid("details")[0].text


def js_percent(part: int, whole: int) -> str:
    """``part`` of ``whole`` as the page writes it (``Math.round``: halves round up)."""
    return f"{math.floor(100 * part / whole + 0.5)}%"


def test_a_model_calls_details_show_its_usage_and_shared_prefix_or_say_they_are_unknown(
    page: TracePage, trace: dict[str, Any]
) -> None:
    page.open(trace)

    def row(n: int) -> Any:
        """Call ``n``'s row in the list, found afresh (a click draws the list anew)."""
        return next(r for r in page.testid("model-call") if int(r.get_attribute("data-n")) == n)

    listed = sorted(int(r.get_attribute("data-n")) for r in page.testid("model-call"))
    known = next(n for n in listed if trace["model_calls"][n]["usage"] and trace["model_calls"][n]["shared_tokens"])
    unknown = next(n for n in listed if trace["model_calls"][n]["usage"] is None)
    call = trace["model_calls"][known]
    usage, sent, shared = call["usage"], call["sent_tokens"], call["shared_tokens"]
    row(known).click()
    assert page.testid("call-usage")[0].text == (
        f"input {usage['input_tokens']:,} ({usage['cached_input_tokens']:,} cached, "
        f"{js_percent(usage['cached_input_tokens'], usage['input_tokens'])}), output {usage['output_tokens']:,}")
    assert page.testid("call-shared")[0].text == (
        f"{sent:,} tokens, {shared:,} of them the call before's prefix ({js_percent(shared, sent)})")
    assert f"{js_percent(shared, sent)} shared" in row(known).text
    row(unknown).click()
    assert page.testid("call-usage")[0].text == "unknown (recorded before usage was)"
    assert page.testid("call-shared")[0].text == "unknown (recorded before the sent size was)"
    assert "shared" not in row(unknown).text  # (never 0% for a call whose share is unknown)


def test_a_click_on_a_message_shows_its_seq_time_kind_mode_summary_and_ends(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    row = next(r for r in page.testid("message") if r.get_attribute("data-mode") == "reply")
    message = trace["messages"][int(row.get_attribute("data-i"))]
    row.click()
    details = page.testid("details")[0].text
    sender = next(a for a in trace["actors"] if a["id"] == message["from"])
    for line in (f"seq\n{message['seq']}", f"time\n{message['t']:.3f} s", f"kind\n{message['kind']}", "mode\nreply",
                 f"summary\n{message['summary']}", f"from\n{sender['role']} {sender['label']} {sender['id']}"):
        assert line in details
    asked = trace["messages"][message["reply_to"]]
    assert f"answers\n#{asked['i']} {asked['kind']} (seq {asked['seq']})" in details


def test_the_four_modes_are_drawn_differently(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    looks = page.js("""const looks = {};
        for (const g of document.querySelectorAll('#diagram-svg [data-mode]')) {
            const line = g.querySelector('line');
            looks[g.dataset.mode] = [line.getAttribute('stroke-dasharray'), line.getAttribute('stroke-width'),
                                     !!g.querySelector('polyline'), !!g.querySelector('circle')].join(' ');
        }
        return looks""")
    assert set(looks) == set(MODES), "the first screen of the trace has every mode"
    assert len(set(looks.values())) == len(MODES), looks


def test_hovering_a_message_shows_its_kind_ends_and_summary(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    row = page.testid("message")[3]
    message = trace["messages"][int(row.get_attribute("data-i"))]
    ActionChains(page.driver).move_to_element(row).perform()
    (tooltip,) = page.css("#tooltip")
    assert tooltip.is_displayed()
    assert tooltip.text.startswith(f"{message['kind']} ({message['mode']})\n")
    assert message["summary"] in tooltip.text


def test_arrow_keys_walk_through_the_rows(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    page.css("#diagram-scroll")[0].send_keys(Keys.ARROW_DOWN, Keys.ARROW_DOWN)
    second = rows_of(trace)[1]
    assert f"seq\n{second['seq']}" in page.testid("details")[0].text
    assert page.js("return document.querySelectorAll('#diagram-svg .row.sel').length") == 1


def test_search_filters_the_diagram_to_the_rows_that_match(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    before = shown(page)
    assert before["shown"] == before["total"] == len(trace["messages"]) + len(trace["marks"])
    page.testid("search")[0].send_keys(NEEDLE.upper())
    page.wait_for(f"return document.getElementById('shown-count').dataset.shown !== '{before['shown']}'",
                  "the search never filtered the diagram")
    assert shown(page)["shown"] == 1
    (only,) = drawn_rows(page)
    target = next(m for m in trace["messages"] if NEEDLE in m["summary"])
    assert (only["seq"], only["i"]) == (target["seq"], target["i"]) and NEEDLE in only["text"]


def test_search_matches_kinds_and_the_actor_counts_follow_it(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    page.testid("search")[0].send_keys("calltool")
    expected = [row for row in rows_of(trace) if "calltool" in searchable(row)]
    page.wait_for(f"return document.getElementById('shown-count').dataset.shown === '{len(expected)}'",
                  f"the search for calltool should show {len(expected)} rows")
    assert {row["seq"] for row in drawn_rows(page)} <= {row["seq"] for row in expected}
    counts = page.js("""return Object.fromEntries([...document.querySelectorAll('[data-testid=actor-toggle]')]
        .map(box => [box.dataset.value, Number(box.closest('label').querySelector('.count').textContent.replace(/,/g, ''))]))""")
    assert counts["apps/main"] == counts["engine/main"] == len(expected)
    assert counts["history/main"] == 0


def toggle(page: TracePage, menu: str, value: str) -> None:
    """Open the filter ``menu`` and click the box of ``value``."""
    page.testid(menu)[0].find_element("css selector", "summary").click()
    box = next(b for b in page.css(f'#{menu} input[type=checkbox]') if b.get_attribute("data-value") == value)
    box.click()


def test_hiding_an_actor_removes_its_column_and_every_message_to_or_from_it(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    toggle(page, "actor-filter", "history/main")
    kept = [m for m in trace["messages"] if "history/main" not in (m["from"], m["to"])]
    kept_marks = [k for k in trace["marks"] if k["author"] != "history/main"]
    page.wait_for(f"return document.getElementById('shown-count').dataset.messages === '{len(kept)}'",
                  f"hiding history should leave {len(kept)} messages")
    assert shown(page)["shown"] == len(kept) + len(kept_marks)
    assert "history/main" not in [head.get_attribute("data-actor") for head in page.testid("actor")]
    kept_i = {m["i"] for m in kept}
    assert all(row["i"] in kept_i for row in drawn_rows(page) if row["i"] is not None)


def test_hiding_a_kind_hides_its_rows(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    toggle(page, "kind-filter", "m:Appended")
    kept = [m for m in trace["messages"] if m["kind"] != "Appended"]
    page.wait_for(f"return document.getElementById('shown-count').dataset.messages === '{len(kept)}'",
                  f"hiding Appended should leave {len(kept)} messages")
    assert "Appended" not in page.js("return [...document.querySelectorAll('#diagram-svg .kind')].map(t => t.textContent)")


def test_every_mark_is_on_the_diagram_with_its_type_and_author(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    page.testid("kind-filter")[0].find_element("css selector", "summary").click()
    none = next(b for b in page.css("#kind-filter button") if b.text == "none")
    none.click()
    for box in page.css("#kind-filter input[type=checkbox]"):
        if box.get_attribute("data-value").startswith("k:"):
            box.click()
    page.wait_for(f"return document.getElementById('shown-count').dataset.shown === '{len(trace['marks'])}'",
                  "showing only the marks should show every mark")
    rows = drawn_rows(page)
    assert {row["type"] for row in rows} == {k["type"] for k in trace["marks"]}
    for row in rows:
        mark = next(k for k in trace["marks"] if k["seq"] == row["seq"] and k["type"] == row["type"])
        assert row["text"].startswith(f"{mark['type']} · {mark['author']} — ")


def test_a_time_range_keeps_only_the_rows_inside_it(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    t0, t1 = round(trace["duration"] * 0.4, 3), round(trace["duration"] * 0.5, 3)
    page.testid("t-from")[0].send_keys(str(t0), Keys.TAB)
    page.testid("t-to")[0].send_keys(str(t1), Keys.TAB)
    inside = [row for row in rows_of(trace) if t0 <= row["t"] <= t1]
    page.wait_for(f"return document.getElementById('shown-count').dataset.shown === '{len(inside)}'",
                  f"the range {t0}..{t1} should show {len(inside)} rows")
    assert drawn_rows(page)[0]["seq"] == inside[0]["seq"]
    (canvas,) = page.testid("timeline-canvas")
    scale = json.loads(canvas.get_attribute("data-scale"))
    assert (scale["view0"], scale["view1"]) == (t0, t1), "the timeline zooms to the range"
    calls = [c for c in trace["model_calls"] if t0 <= c["t"] <= t1]
    assert page.css("#calls-count")[0].text == f"({len(calls)} of {len(trace['model_calls'])})"


def test_an_empty_thread_shows_a_page_that_says_so(page: TracePage) -> None:
    page.open(empty_trace())
    assert page.testid("diagram-empty")[0].text == "This trace has no messages."
    assert page.testid("message") == [] and page.testid("model-call") == []
    assert shown(page) == {"shown": 0, "messages": 0, "total": 0}


def test_texts_with_markup_and_unicode_show_as_written(page: TracePage) -> None:
    data = one_actor_trace()
    page.open(data)
    assert page.css("#trace-title")[0].text == "Trace of thread solo — 東京 </script>"
    page.testid("model-call")[0].click()
    shown_texts = page.js("return [...document.querySelectorAll('[data-testid=context-text]')].map(e => e.textContent)")
    assert shown_texts == [data["texts"][e["text"]] for e in data["model_calls"][0]["entries"]]
    assert set(shown_texts) <= set(NASTY_TEXTS)
    assert page.js("return [document.querySelectorAll('img, #details b').length, window.pwned === undefined]") == [0, True]
    assert page.testid("stat-at")[0].text == "stopped at seq 4"


# ------------------------------------------------------------------ the screenshot and the big thread


def png_colours(png: bytes) -> tuple[int, int, set[bytes]]:
    """The width, height and set of RGB colours of an 8-bit, non-interlaced PNG."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, []
    width = height = depth = colour_type = interlace = 0
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    assert depth == 8 and colour_type in (2, 6) and interlace == 0, "an unexpected PNG format"
    bpp = 3 if colour_type == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    colours: set[bytes] = set()
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:    # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:  # Up
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif kind == 3:  # Average
            for i in range(stride):
                line[i] = (line[i] + (((line[i - bpp] if i >= bpp else 0) + prev[i]) >> 1)) & 255
        elif kind == 4:  # Paeth
            for i in range(stride):
                a, b, c = (line[i - bpp], prev[i], prev[i - bpp]) if i >= bpp else (0, prev[i], 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        colours.update(bytes(line[x:x + 3]) for x in range(0, stride, bpp))
        prev = line
    return width, height, colours


def test_a_screenshot_of_the_page_is_not_blank(page: TracePage, trace: dict[str, Any]) -> None:
    page.open(trace)
    width, height, colours = png_colours(page.driver.get_screenshot_as_png())
    assert width > 800 and height > 500
    assert len(colours) > 100, f"only {len(colours)} colours: the screenshot looks blank"
    # the state legend's swatches are solid: their colours are in the picture
    swatches = page.js("""return [...document.querySelectorAll('#state-legend .swatch')]
        .map(s => getComputedStyle(s).backgroundColor.match(/\\d+/g).map(Number))""")
    assert len(swatches) == len(STATES)
    assert all(bytes(rgb) in colours for rgb in swatches), "the legend's colours are not in the screenshot"


def test_a_thread_of_20000_records_is_drawn_with_only_the_rows_in_view(page: TracePage) -> None:
    # (how long drawing and searching take is benchmarks/bench_trace.py's: a time bound here fails under load)
    data = synthetic_trace(20_000, seed=3, agents=2)
    assert data["counts"]["records"] >= 20_000
    page.open(data, "big")
    # virtualised: the DOM holds the rows in view, not 30,000 of them
    assert 10 < len(page.testid("message")) + len(page.testid("mark-row")) < 150
    # and the last rows are there once scrolled to
    page.js("const s = document.getElementById('diagram-scroll'); s.scrollTop = s.scrollHeight;")
    last = data["messages"][-1]
    page.wait_for(f"return !!document.querySelector('#diagram-svg [data-i=\"{last['i']}\"]')",
                  "scrolled to the end, the last message is not drawn")
    page.testid("search")[0].send_keys("foldintorecap")
    folds = sum(m["kind"] == "FoldIntoRecap" for m in data["messages"])
    page.wait_for(f"return document.getElementById('shown-count').dataset.messages === '{folds}'",
                  "searching the big thread never ended")
