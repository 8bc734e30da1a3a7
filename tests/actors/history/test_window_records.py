"""The apps' windows recorded as changes of the ones before them, read back as they were."""

from __future__ import annotations

import json
import logging
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from livecontext.actors.history import HistoryState
from livecontext.actors.history._windows import windows_records
from livecontext.protocol.kernel import Message
from livecontext.protocol.records import (
    WHOLE_EVERY,
    AppWindow,
    AppWindowChange,
    AppWindowsChanged,
    AppWindowsRecorded,
    TextChange,
)
from livecontext.protocol.wire import MalformedDataError, make_converter

CONVERTER = make_converter()

Edit = tuple[int, int, str]
"""Where (any number: taken modulo the text's length), how many characters to take out, and
what to put in."""
EDITS = st.tuples(st.integers(0, 10_000), st.integers(0, 6), st.text(max_size=12))
"""(``st.text`` draws any Unicode but lone surrogates, which no app's text can hold: JSON
cannot write them.)"""


def edited(text: str, edit: Edit) -> str:
    where, cut, put = edit
    at = where % (len(text) + 1)
    return text[:at] + put + text[at + cut:]


def record(state: HistoryState, apps: tuple[AppWindow, ...]) -> list[Message]:
    """What the store records for ``apps``, written and read back as the log does, applied to ``state``."""
    written = windows_records(state, apps)
    for message in written:
        read = CONVERTER.load_message(json.loads(json.dumps(CONVERTER.dump_message(message))))
        assert read == message
        state.apply(state.seq + 1, read)
    return written


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.text(max_size=30), steps=st.lists(st.tuples(EDITS, EDITS, st.booleans()), max_size=40),
       every=st.sampled_from([2, 3, 7, WHOLE_EVERY]))
def test_the_windows_read_back_after_each_record_are_the_ones_recorded(
        first: str, steps: list[tuple[Edit, Edit, bool]], every: int) -> None:
    window, state_text, plain = first, first, f"[Window: plain]\n{first}"
    log: list[Message] = []
    shown: list[tuple[int, dict[str, AppWindow]]] = []
    history = HistoryState("t")
    with mock.patch("livecontext.actors.history._windows.WHOLE_EVERY", every):
        for window_edit, state_edit, saves_state in steps:
            window, state_text = edited(window, window_edit), edited(state_text, state_edit)
            plain = edited(plain, window_edit)
            apps = (AppWindow("stateful", window, state_text if saves_state else None), AppWindow("plain", plain))
            log += record(history, apps)
            assert history.windows == {app.app: app for app in apps}
            assert all(n < every for n in history.window_changes.values())
            shown.append((history.seq, dict(history.windows)))
    # as of each seq, read again from the first record (as render --at and trace do)
    for seq, windows in shown:
        again = HistoryState("t")
        for n, message in enumerate(log[:seq], start=1):
            again.apply(n, message)
        assert again.windows == windows


def test_a_window_that_grows_is_recorded_whole_once_in_every_so_many_records() -> None:
    history = HistoryState("t")
    kinds = []
    for k in range(2 * WHOLE_EVERY + 1):
        items = ", ".join(f"crate-{i}" for i in range(k + 1))
        (written,) = record(history, (AppWindow("inventory", f"[Window: inventory]\n{items}", f"[{items}]"),))
        kinds.append(type(written))
    wholes = [n for n, kind in enumerate(kinds) if kind is AppWindowsRecorded]
    assert wholes == [0, WHOLE_EVERY, 2 * WHOLE_EVERY]
    assert kinds.count(AppWindowsChanged) == len(kinds) - 3
    last = history.windows["inventory"]
    assert last.window.endswith(f"crate-{2 * WHOLE_EVERY}") and last.state == f"[{last.window.split(chr(10))[1]}]"


def test_a_change_that_would_write_as_much_as_the_whole_window_is_recorded_whole() -> None:
    history = HistoryState("t")
    record(history, (AppWindow("a", "short"),))
    (written,) = record(history, (AppWindow("a", "other"),))
    assert written == AppWindowsRecorded((AppWindow("a", "other"),))
    (written,) = record(history, (AppWindow("a", "other and more"),))
    assert written == AppWindowsChanged((AppWindowChange("a", TextChange(5, 5, 0, " and more")),))


def test_a_window_that_did_not_change_is_not_recorded_and_the_others_are_each_in_their_form() -> None:
    history = HistoryState("t")
    record(history, (AppWindow("a", "A" * 40), AppWindow("b", "B")))
    written = record(history, (AppWindow("a", "A" * 41), AppWindow("b", "B"), AppWindow("c", "C")))
    assert written == [AppWindowsRecorded((AppWindow("c", "C"),)),
                       AppWindowsChanged((AppWindowChange("a", TextChange(40, 40, 0, "A")),))]


def test_a_whole_window_record_as_the_first_version_wrote_it_still_reads() -> None:
    stored = {"windows": [{"app": "inventory", "window": "[Window: inventory]\nbolts", "state": "[\"bolts\"]"}],
              "type": "AppWindowsRecorded"}
    history = HistoryState("t")
    history.apply(1, CONVERTER.load_message(stored))
    assert history.windows == {"inventory": AppWindow("inventory", "[Window: inventory]\nbolts", "[\"bolts\"]")}
    (written,) = record(history, (AppWindow("inventory", "[Window: inventory]\nbolts, nuts and washers",
                                            "[\"bolts\", \"nuts and washers\"]"),))
    assert isinstance(written, AppWindowsChanged)  # (its count since that whole copy is known: 0)


def test_a_change_of_a_window_other_than_the_one_it_was_made_of_is_not_applied(
        caplog: pytest.LogCaptureFixture) -> None:
    history = HistoryState("t")
    history.apply(1, AppWindowsRecorded((AppWindow("a", "one two"),)))
    # (as if the record that made "one two three" of it were lost)
    with caplog.at_level(logging.WARNING, logger="livecontext.history"):
        history.apply(2, AppWindowsChanged((AppWindowChange("a", TextChange(13, 13, 0, " four")),)))
    assert "a" not in history.windows and history.windows_at == 2
    assert "the window of app 'a' recorded at seq 2 changes a window that was not recorded before it" in caplog.text
    assert windows_records(history, (AppWindow("a", "one two three four five"),)) == [
        AppWindowsRecorded((AppWindow("a", "one two three four five"),))]


@pytest.mark.parametrize("data", [[5, 3, "x", 3], [5, 1, "x"], [5, -1, "x", 0], [5, True, "x", 0], {"size": 5}])
def test_a_malformed_text_change_is_refused_saying_what_one_is_and_where(data: object) -> None:
    stored = {"changes": [{"app": "a", "window": data, "state": None}], "type": "AppWindowsChanged"}
    with pytest.raises(MalformedDataError, match=r"malformed AppWindowsChanged: a text change is \[size, "
                                                 r"head, middle, tail\] .*@ \$\.changes\[0\]\.window"):
        CONVERTER.load_message(stored)
