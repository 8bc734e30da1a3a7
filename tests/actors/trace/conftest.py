"""A real headless browser for the trace page's tests: Debian's chromium and chromedriver.

Selenium is pointed at both binaries, so its selenium-manager never downloads anything. A
machine without them skips the browser tests, except in CI (``.ci/run`` sets
``LIVECONTEXT_CI`` and installs the two packages), where a missing browser fails them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WINDOW = (1400, 850)
"""The browser window's size, in CSS pixels."""


def missing(what: str) -> None:
    """Skip a test this machine cannot run, except in CI (``LIVECONTEXT_CI``): there it fails."""
    if os.environ.get("LIVECONTEXT_CI"):
        pytest.fail(f"{what}; CI must run the browser tests (.ci/run installs chromium and chromium-driver)")
    pytest.skip(what)


class TracePage:
    """The browser, on one trace page at a time."""

    def __init__(self, driver: Any, folder: Path) -> None:
        self.driver = driver
        self.folder = folder
        self.url = ""

    def open(self, data: dict[str, Any], name: str = "trace") -> TracePage:
        """Write ``data``'s page to a file, open it and wait until its first screen is drawn."""
        from livecontext.actors.trace._page import render_page

        path = self.folder / f"{name}.html"
        path.write_text(render_page(data), encoding="utf-8")
        self.url = path.as_uri()
        self.logs()  # what earlier pages logged is not this page's
        self.driver.get(self.url)
        self.wait_for("return window.traceReady === true", f"the page of {name} never said it was drawn")
        return self

    def js(self, script: str, *args: Any) -> Any:
        """The value of ``script`` (a function body) run in the page."""
        return self.driver.execute_script(script, *args)

    def wait_for(self, script: str, failure: str, timeout: float = 60.0) -> Any:
        """Poll ``script`` until it returns something true; fail with ``failure`` past ``timeout``.

        The timeout is a deadlock guard, not a speed bound: the slowest wait (20,000 records
        drawn) takes about a second, several on a loaded machine (speed is bench_trace.py's).
        """
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(script)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(failure)
            time.sleep(0.02)

    def logs(self) -> dict[str, list[dict[str, Any]]]:
        """The browser's console entries and network events since the last call."""
        return {"browser": self.driver.get_log("browser"),
                "network": [json.loads(entry["message"])["message"] for entry in self.driver.get_log("performance")
                            if '"Network.requestWillBeSent"' in entry["message"]]}

    def console_errors(self) -> list[str]:
        """The console's errors (and uncaught exceptions) since the last call."""
        return [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]

    def css(self, selector: str) -> list[Any]:
        """The elements that match ``selector`` now."""
        return list(self.driver.find_elements("css selector", selector))

    def testid(self, name: str) -> list[Any]:
        """The elements with ``data-testid="name"``."""
        return self.css(f'[data-testid="{name}"]')


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless chromium for the session (starting one takes a second or two)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing("selenium is not installed: pip install -e '.[test]'")
    for binary, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not binary.exists():
            missing(f"{binary} is missing: apt-get install {package}")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     f"--window-size={WINDOW[0]},{WINDOW[1]}",
                     f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def page(browser: Any, tmp_path: Path) -> Iterator[TracePage]:
    """The browser, ready to open trace pages written in this test's folder; after the test,
    the page must have logged no error."""
    page = TracePage(browser, tmp_path)
    yield page
    errors = page.console_errors()
    assert errors == [], f"the page logged errors: {errors}"
