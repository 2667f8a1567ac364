"""The attempt page in a real browser: Debian's headless Chromium, driven by Selenium through Debian's
chromedriver (same version; `make browser` installs both). The page is opened from a file:// URL
(no server, no network), its recording played in the vendored asciinema-player, and the hostile
log and recording must stay text: no alert, no console error, no element made of them."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from argusic.publication.attempt_page import load_player_assets, write_report
from argusic.publication.replay import find_attempt
from test_replay import ATTEMPT_ID, HOSTILE_CAST, HOSTILE_LOG, HOSTILE_OUTPUT, land_attempt

pytestmark = pytest.mark.slow

BROWSER_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,1600",
)


@contextmanager
def chromium(profile: Path, args: Iterable[str], **capabilities: str) -> Iterator:
    """Debian's headless Chromium through its chromedriver (Selenium Manager never downloads one), with
    the browser's console kept; quits at the end."""
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and chromedriver):
        pytest.fail("Debian's chromium and chromium-driver are needed: run `make browser`")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SE_OFFLINE", "true")
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for arg in (*args, f"--user-data-dir={profile / 'profile'}"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        for name, value in capabilities.items():
            options.set_capability(name, value)
        driver = webdriver.Chrome(
            service=Service(chromedriver, log_output=str(profile / "driver.log")), options=options
        )
        try:
            yield driver
        finally:
            driver.quit()


@pytest.fixture
def browser(tmp_path: Path):
    # an alert stays open: the test looks for it
    with chromium(tmp_path, BROWSER_ARGS, unhandledPromptBehavior="ignore") as driver:
        yield driver


def test_attempt_page_plays_in_chromium_and_stays_inert(record_doc, browser, tmp_path):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.support.ui import WebDriverWait

    load_player_assets()  # vendored by `make player`: fails with the command to run when missing
    land_attempt(record_doc, HOSTILE_LOG.encode(), HOSTILE_CAST)
    page = write_report(find_attempt(ATTEMPT_ID), tmp_path / "attempt.html")

    browser.get(page.as_uri())
    wait = WebDriverWait(browser, 30, poll_frequency=0.1)
    wait.until(
        lambda d: d.execute_script("return !!(window.argusicPlayer && document.querySelector('.ap-player'))")
    )
    browser.execute_async_script(
        "const done = arguments[0]; window.argusicPlayer.play().then(() => done(true));"
    )
    # Playing advances the player's clock and the terminal draws the recording's text, as text.
    wait.until(lambda d: d.execute_script("return window.argusicPlayer.getCurrentTime()") > 0.6)
    terminal = "return document.querySelector('.ap-term').textContent"
    wait.until(lambda d: "<b>not bold</b> &amp; done" in d.execute_script(terminal))  # the last event
    shown = browser.execute_script(terminal)
    assert "hello from the recording" in shown and HOSTILE_OUTPUT in shown
    screenshot = tmp_path / "attempt_page.png"
    browser.save_screenshot(str(screenshot))
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # Inert: no alert, no element made of the log or the recording, the log shown as its text.
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert  # noqa: B018 - raises when no alert is open
    counts = browser.execute_script(
        "return [document.querySelectorAll('script').length, document.querySelectorAll('img').length,"
        " document.querySelectorAll('pre.log b, pre.log script, .ap-term b, .ap-term script').length]"
    )
    assert counts == [3, 0, 0]
    log = browser.execute_script("return document.getElementById('log').textContent")
    assert "<img src=x onerror=alert(2)></pre><script>alert(3)</script>" in log
    assert "red text" in log and "window title" not in log
    assert browser.title == "readme-runner / wavgen / attempt 1 — Argusic attempt"

    # No console errors (a blocked script or a policy violation would be one).
    entries = browser.get_log("browser")
    assert [e for e in entries if e["level"] == "SEVERE"] == [], entries
