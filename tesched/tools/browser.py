"""Headless Chromium, driven through selenium, for the tests and benchmarks of tesched's pages.

Uses the system's Chromium and ChromeDriver (Debian's ``chromium`` and ``chromium-driver``:
``/usr/bin/chromium``, ``/usr/bin/chromedriver``; ``TESCHED_CHROMIUM``/``TESCHED_CHROMEDRIVER`` are not
read: pass other paths to :func:`open_browser`). Nothing is downloaded: selenium is given the driver's
path, so its own driver manager never runs. Chromium starts with a fresh profile directory and without
its background network traffic (the pages need no network). :func:`missing` says why a browser cannot
start here, for tests to skip with that reason.
"""
from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
         "--window-size=1400,1000")


def missing(chromium: str = CHROMIUM, driver: str = CHROMEDRIVER) -> str | None:
    """Why no headless browser can start (a sentence naming what to install), or None when it can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install tesched[viz])"
    for path, package in ((chromium, "chromium"), (driver, "chromium-driver")):
        if shutil.which(path) is None:
            return f"{path} not found (apt-get install {package})"
    return None


@contextlib.contextmanager
def open_browser(chromium: str = CHROMIUM, driver: str = CHROMEDRIVER) -> Iterator[Any]:
    """A selenium WebDriver for headless Chromium with a fresh profile, quit on exit.

    Parameters
    ----------
    chromium, driver : str
        Paths of the browser and of ChromeDriver.

    Yields
    ------
    selenium.webdriver.Chrome
    """
    reason = missing(chromium, driver)
    if reason is not None:
        raise RuntimeError(f"cannot start headless Chromium: {reason}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="tesched-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for flag in FLAGS + (f"--user-data-dir={profile}",):
            options.add_argument(flag)
        browser = webdriver.Chrome(service=Service(executable_path=driver), options=options)
        try:
            yield browser
        finally:
            browser.quit()


def file_url(path: str | Path) -> str:
    """The ``file://`` URL of a local file."""
    return Path(path).resolve().as_uri()
