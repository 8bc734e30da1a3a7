"""Building a trace of a long thread (issue 18): records -> seconds to build, JSON and SVG sizes.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_trace.py                  # ~1 minute: writes the thread first
    .venv/bin/python benchmarks/bench_trace.py --records 5000   # rougher, faster

It writes a thread of ``--records`` records with ``tests/support/trace_threads.py`` (a real
agent with a scripted model, a notebook, a recap maintainer and two analyzers: about one
model call every three records) into a temporary SQLite store, then builds its trace as
``livecontext trace`` does (the CLI's garbage-collector settings), ``--repeat`` times, and
prints for the fastest: the wall and CPU seconds to build it (read every record once, replay
it with the history store's code, render each model call), to make its JSON and to draw its
SVG, and their sizes, then opens its page in headless Chromium (Debian's ``chromium`` and
``chromium-driver``; ``--no-draw`` skips it) and prints the milliseconds until its first screen
is drawn (``window.traceReadyAt``) and until a search of its messages is shown (typing a
message kind into the search box, its 120 ms debounce included), the best of ``--repeat``. The
targets: a few seconds to build 20,000 records; under 3 seconds to draw them; a search that
feels immediate (under 2 seconds).

Not a test: pytest does not collect it (its name does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

from livecontext.actors.trace import Trace, build_trace, trace_json, trace_svg  # noqa: E402
from livecontext.protocol.wire import dump_json  # noqa: E402
from livecontext.runtime import gc_tuned  # noqa: E402
from tests.support.trace_threads import LONG_THREAD, make_long_thread  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-draw", action="store_true", help="do not time the page in headless Chromium")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        url = f"sqlite:{Path(tmp) / 'trace.db'}"
        t0 = time.perf_counter()
        records = make_long_thread(url, args.records)
        print(f"wrote a thread of {records:,} records in {time.perf_counter() - t0:.1f} s")
        stack.enter_context(gc_tuned())  # the CLI runs every command so
        best: tuple[float, float, Trace] | None = None
        for _ in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            built = trio.run(build_trace, url, LONG_THREAD)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if best is None or wall < best[0]:
                best = (wall, cpu, built)
        assert best is not None
        wall, cpu, built = best
        t1 = time.perf_counter()
        data = trace_json(built)
        text = dump_json(data)
        t2 = time.perf_counter()
        svg = trace_svg(data)
        t3 = time.perf_counter()
        counts = data["counts"]
        print(f"trace of {counts['records']:,} records ({counts['messages']:,} messages, "
              f"{counts['model_calls']:,} model calls): built in {wall:.2f} s ({cpu:.2f} s CPU), best of {args.repeat}")
        print(f"  JSON: {len(text.encode()) / 1e6:.1f} MB in {t2 - t1:.2f} s "
              f"({len(data['texts']):,} texts, {sum(len(c['entries']) for c in data['model_calls']):,} context entries)")
        print(f"  SVG:  {len(svg.encode()) / 1e3:.0f} kB in {t3 - t2:.2f} s (the first and last rows)")
        if not args.no_draw:
            drawn, searched = draw_times(data, Path(tmp), args.repeat)
            print(f"  page: drawn in {min(drawn):,.0f} ms in headless Chromium (best of {len(drawn)}: "
                  f"{', '.join(f'{ms:,.0f}' for ms in drawn)}; target < 3,000 ms)")
            print(f"  search: shown in {min(searched):,.0f} ms (best of {len(searched)}: "
                  f"{', '.join(f'{ms:,.0f}' for ms in searched)}; target < 2,000 ms)")


def draw_times(data: dict[str, Any], folder: Path, repeat: int) -> tuple[list[float], list[float]]:
    """Milliseconds until the page of ``data`` says its first screen is drawn, and until a
    search for the kind of its last message is shown, ``repeat`` times each."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from livecontext.actors.trace._page import render_page

    page = folder / "trace.html"
    page.write_text(render_page(data), encoding="utf-8")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900",
                     f"--user-data-dir={folder / 'profile'}"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path="/usr/bin/chromedriver"))
    kind = data["messages"][-1]["kind"]  # (some of the messages, not all: the count shown changes)
    times, searches = [], []
    try:
        for _ in range(repeat):
            driver.get(page.as_uri())
            _wait(driver, "return window.traceReady === true", "the page never said it was drawn")
            times.append(float(driver.execute_script("return window.traceReadyAt")))
            box = driver.find_element("css selector", '[data-testid="search"]')
            shown = driver.execute_script("return document.getElementById('shown-count').dataset.messages")
            started = time.perf_counter()
            box.send_keys(kind.lower())
            _wait(driver, f"return document.getElementById('shown-count').dataset.messages !== '{shown}'",
                  f"the search for {kind} never ended")
            searches.append((time.perf_counter() - started) * 1000)
    finally:
        driver.quit()
    return times, searches


def _wait(driver: Any, script: str, failure: str) -> None:
    deadline = time.monotonic() + 60
    while driver.execute_script(script) is not True:
        if time.monotonic() > deadline:
            raise SystemExit(f"{failure} (60 s)")
        time.sleep(0.02)


if __name__ == "__main__":
    main()
