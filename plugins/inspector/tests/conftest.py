"""What the browser tests share: one Debian chromium for a module (through Playwright's
``executable_path``), a fresh browser context per page, and where screenshots go
(``$INSPECTOR_SCREENSHOTS`` or a temporary folder)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = os.environ.get("INSPECTOR_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("inspector-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=chromium,
                                      args=["--no-sandbox", "--disable-gpu"])
        yield instance
        instance.close()


@pytest.fixture
def browsing(browser: Any) -> Callable[[], AbstractContextManager[tuple[Any, list[str]]]]:
    """``with browsing() as (page, errors)``: a page of a fresh browser context, and the
    script errors and console errors it had."""

    @contextmanager
    def open_page() -> Iterator[tuple[Any, list[str]]]:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console",
                lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        try:
            yield page, errors
        finally:
            context.close()

    return open_page
