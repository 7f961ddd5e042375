"""The web UI in a real browser: Debian's chromium driven by Playwright (``executable_path``;
Playwright's own browser download is not used). One browser for the module; each test saves a
screenshot of the pages it visits (to ``$INSPECTOR_SCREENSHOTS`` or a temporary folder).

Search, open a tool, run a call, see it in the log (live), keyboard navigation and form labels.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Literal

import httpx
import pytest
from pydantic import BaseModel, Field

from toolregistry import Tool, ToolMetadata, ToolRegistry
from toolregistry_inspector import InspectorServer, execution_log, serve

TOKEN = "browser-token-0123456789"


@pytest.fixture(scope="module")
def app() -> Iterator[tuple[ToolRegistry, InspectorServer]]:
    registry = ToolRegistry()

    @registry.register(namespace="math")
    def add(a: int, b: int = 2) -> int:
        """Add two integers."""
        return a + b

    @registry.register
    def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
        """The current weather in a city.

        Args:
            city: The city's name.
            unit: Celsius or Fahrenheit.
        """
        return f"sunny in {city}, 21 {unit}"

    registry.register(Tool(name="archive_mail", description="Archive old mail.",
                           callable=lambda: "ok", metadata=ToolMetadata(defer=True)))
    server = serve(registry, port=0, token=TOKEN, block=False, quiet=True)
    assert server is not None
    yield registry, server
    server.close()
    registry.close()


def _session_base(page: Any, url: str | None = None) -> str:
    """``http://127.0.0.1:PORT/s/<session>`` of the page's (or ``url``'s) inspector session."""
    url = url or page.url
    base, found, _ = url.partition("/s/")
    assert found, url
    return f"{base}/s/{url[len(base) + 3:].split('/')[0]}"


@pytest.fixture
def page(browsing: Any, app: Any) -> Iterator[Any]:
    _, server = app
    with browsing() as (page, errors):
        page.goto(server.url)  # the printed URL, token included
        yield page
    assert errors == [], errors  # no script error, no refused asset (CSP, 403)


def test_search_open_a_tool_run_it_and_see_it_live_in_the_log(page: Any, app: Any,
                                                               shots: Path) -> None:
    registry, _ = app
    from playwright.sync_api import expect

    # The token was traded for the session path and dropped from the address bar.
    assert page.url == f"{_session_base(page)}/tools" and TOKEN not in page.url
    expect(page.locator("h1")).to_contain_text("3 of 3")
    page.screenshot(path=str(shots / "tools.png"), full_page=True)

    page.get_by_label("Name or description").fill("weather")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("table.tools tbody tr")).to_have_count(1)
    page.get_by_role("link", name="get_weather").click()
    expect(page.locator("h1")).to_have_text("get_weather")
    expect(page.locator(".format h3")).to_contain_text(["openai-chat", "anthropic"])
    page.screenshot(path=str(shots / "tool.png"), full_page=True)

    page.get_by_label("city").fill("Kyoto")
    page.get_by_label("unit").select_option('"f"')
    page.get_by_label("Answer messages for").select_option("anthropic")
    page.get_by_role("button", name="Run").click()
    expect(page.locator(".result-text")).to_have_text("sunny in Kyoto, 21 f")
    expect(page.locator(".messages")).to_contain_text("tool_result")
    page.screenshot(path=str(shots / "try-it.png"), full_page=True)

    page.get_by_role("link", name="Log", exact=True).click()
    rows = page.locator("#log-table tbody tr")
    expect(rows.first).to_contain_text("get_weather")
    expect(rows.first).to_contain_text("ok")
    before = rows.count()
    # A call made by the application appears without a reload.
    registry.invoke("math-add", {"a": 40}, call_id="live-1")
    expect(rows).to_have_count(before + 1, timeout=10_000)
    expect(rows.first).to_contain_text("live-1")
    page.screenshot(path=str(shots / "log.png"), full_page=True)


def test_other_pages_render(page: Any, app: Any, shots: Path) -> None:
    from playwright.sync_api import expect

    base = _session_base(page)
    for path, heading in (("/formats", "What the model is sent"),
                          ("/search?q=weather", "Discovery search"),
                          ("/approvals", "Approvals"),
                          ("/changes", "Tool changes waiting for review")):
        page.goto(base + path)
        expect(page.locator("h1")).to_have_text(heading)
        page.screenshot(path=str(shots / f"{path.strip('/').split('?')[0]}.png"),
                        full_page=True)
    # Without the discovery plugin the search page says what to install.
    page.goto(base + "/search?q=weather")
    expect(page.get_by_role("alert")).to_contain_text("pip install toolregistry-discovery")


def test_keyboard_navigation_and_labels(page: Any, app: Any) -> None:
    from playwright.sync_api import expect

    base = _session_base(page)
    for path in ("/tools", "/tools/get_weather", "/log", "/formats", "/search"):
        page.goto(base + path)
        unlabeled = page.evaluate("""() => [...document.querySelectorAll(
            'input:not([type=hidden]), select, textarea')].filter(
            el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label'))
            .map(el => el.name || el.id)""")
        assert unlabeled == [], f"{path}: inputs without a label: {unlabeled}"
    page.goto(base + "/tools")
    # Tab reaches the skip link first; following it moves focus into the main content.
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text("Skip to content")
    page.keyboard.press("Enter")
    focused = page.evaluate("document.activeElement.id")
    assert focused == "main"
    # Then the nav is reachable by keyboard, in order.
    page.goto(base + "/tools")
    names = []
    for _ in range(8):
        page.keyboard.press("Tab")
        names.append(page.evaluate("document.activeElement.textContent.trim()"))
    assert names[1:8] == ["Tools", "Formats", "Search", "Log", "Running", "Approvals",
                          "Changes"]
    # The search field takes typing, and Enter submits the filter form.
    page.get_by_label("Name or description").focus()
    page.keyboard.type("add")
    page.keyboard.press("Enter")
    expect(page.locator("table.tools tbody tr")).to_have_count(1)
    expect(page.locator("table.tools")).to_contain_text("math-add")


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Another local server (another port of 127.0.0.1) that the same browser visits: it
    keeps the headers of every request it gets."""

    seen: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b"<!doctype html><title>elsewhere</title><p>another local app</p>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def other_server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []
    handler = type("Recorder", (_Recorder,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_no_secret_reaches_another_port_of_the_host(page: Any, app: Any,
                                                    other_server: Any) -> None:
    from playwright.sync_api import expect

    _, server = app
    other, seen = other_server
    session_url = page.url
    assert session_url.startswith(server.base_url) and TOKEN not in session_url
    expect(page.locator("h1")).to_contain_text("3 of 3")
    # The browser leaves the inspector for another local app, then visits it again directly.
    page.evaluate("url => { window.location.href = url; }", f"{other}/from-inspector")
    page.wait_for_url(f"{other}/from-inspector")
    page.goto(f"{other}/again")
    assert len(seen) >= 2
    for headers in seen:
        for name, value in headers.items():
            assert TOKEN not in value, (name, value)
    session = _session_base(None, session_url)
    assert all(session.rsplit("/", 1)[-1] not in v for h in seen for v in h.values())
    # Whatever it got is of no use against the inspector, as a cookie or as a bearer token.
    values = [v.strip() for h in seen for v in h.values()] + [
        part.split("=", 1)[-1].strip() for h in seen for part in h.get("cookie", "").split(";")]
    values = [v for v in values if v]
    with httpx.Client(base_url=server.base_url) as client:
        for value in values:
            for headers in ({"cookie": value}, {"authorization": f"Bearer {value}"}):
                assert client.get("/api/log", headers=headers).status_code == 403
    # The inspector still works in the browser that holds the session.
    page.goto(session_url)
    expect(page.locator("h1")).to_contain_text("3 of 3")


@contextmanager
def _serving(registry: ToolRegistry) -> Iterator[InspectorServer]:
    """An inspector over ``registry`` on a free port; both closed after."""
    server = serve(registry, port=0, token=TOKEN, block=False, quiet=True)
    assert server is not None
    try:
        yield server
    finally:
        server.close()
        registry.close()


_AGENT = """
import sys
from toolregistry import ToolRegistry

registry = ToolRegistry(name="agent", config=sys.argv[1])
registry.register(lambda city: f"sunny in {city}", name="agent_weather")
for i in range(int(sys.argv[2])):
    registry.invoke("agent_weather", {"city": "Oslo"}, call_id=f"{sys.argv[3]}-{i}")
registry.close()
"""


def _agent(config: Path, calls: int, prefix: str) -> None:
    """A second real process, the agent: its registry writes its calls to the shared log-db."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _AGENT, str(config), str(calls), prefix],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


@pytest.fixture
def inspect_cli(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """``toolregistry inspect --config app/pyproject.toml`` in a process of its own, over a
    configuration whose log-db the agent shares: (the configuration, the printed URL)."""
    import subprocess
    import sys

    app_dir = tmp_path / "app"
    app_dir.mkdir()
    config = app_dir / "pyproject.toml"
    config.write_text('[tool.toolregistry]\n[tool.toolregistry.plugins.inspector]\n'
                      'log-db = "calls.sqlite"\n', encoding="utf-8")
    exe = Path(sys.executable).with_name("toolregistry")
    proc = subprocess.Popen([str(exe), "--config", str(config), "inspect", "--port", "0",
                             "--token-env", "INSPECTOR_TEST_TOKEN"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "INSPECTOR_TEST_TOKEN": TOKEN})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "http://" in line, (line, proc.poll())
        yield config, line.strip().rsplit(" ", 1)[-1]
    finally:
        proc.terminate()
        proc.communicate(timeout=15)


def test_inspect_shows_the_calls_of_another_process_live(browsing: Any, inspect_cli: Any,
                                                         shots: Path) -> None:
    from playwright.sync_api import expect

    config, url = inspect_cli
    _agent(config, 2, "before")  # calls made before the page is opened
    with browsing() as (page, errors):
        page.goto(url)
        page.get_by_role("link", name="Log", exact=True).click()
        rows = page.locator("#log-table tbody tr")
        expect(rows).to_have_count(2)
        expect(rows.first).to_contain_text("before-1")
        # The agent keeps working: its calls appear without a reload.
        _agent(config, 3, "live")
        expect(rows).to_have_count(5, timeout=15_000)
        expect(rows.first).to_contain_text("live-2")
        expect(rows.first).to_contain_text("agent_weather")
        # The row's tool link stays inside the session.
        href = rows.first.get_by_role("link", name="agent_weather").evaluate("a => a.href")
        assert href == _session_base(page) + "/tools/agent_weather"
        page.screenshot(path=str(shots / "log-shared.png"), full_page=True)
    assert errors == [], errors


def _png(width: int = 4, height: int = 3) -> bytes:
    """A real PNG file (red pixels) that the browser decodes."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


@pytest.fixture
def full_app(tmp_path: Path) -> Iterator[tuple[ToolRegistry, InspectorServer]]:
    """An inspector whose log keeps the values (arguments = "full") in a log-db."""
    from toolregistry import Image

    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry.plugins.inspector]\narguments = "full"\n'
                      'log-db = "calls.sqlite"\nmax-field-chars = 20000\n', encoding="utf-8")
    registry = ToolRegistry(config=config)

    @registry.register
    def chart(title: str) -> list[Any]:
        """A chart and its caption."""
        return [f"caption: {title}", Image.from_bytes(_png(), "image/png")]

    @registry.register
    def snapshot() -> list[Any]:
        """An image and nothing else."""
        return [Image.from_bytes(_png(2, 2), "image/png")]

    @registry.register
    def report(lines: int) -> str:
        """A long report."""
        return "\n".join(f"line {i:05d} " + "x" * 60 for i in range(lines))

    with _serving(registry) as server:
        yield registry, server


def test_a_calls_page_renders_images_text_pages_and_raw_json(browsing: Any, full_app: Any,
                                                             shots: Path) -> None:
    from playwright.sync_api import expect

    registry, server = full_app
    with browsing() as (page, errors):
        page.goto(server.url)
        base = _session_base(page)
        # Try it: a text + image result shows the caption and the image.
        page.goto(base + "/tools/chart")
        page.get_by_label("title").fill("sales")
        page.get_by_role("button", name="Run").click()
        expect(page.locator(".result-text")).to_have_text("caption: sales")
        expect(page.locator(".result-image img")).to_have_count(1)
        page.wait_for_function("document.querySelector('.result-image img').naturalWidth > 0")
        page.screenshot(path=str(shots / "try-it-image.png"), full_page=True)
        # The call is in the log; its row opens the call's page.
        page.get_by_role("link", name="Log", exact=True).click()
        page.locator("#log-table tbody tr").first.get_by_role("link", name="call").click()
        expect(page.locator("h1")).to_have_text(re.compile(r"Call \d+: chart"))
        expect(page.locator(".call-arguments")).to_contain_text('"title": "sales"')
        expect(page.locator(".call-text")).to_have_text("caption: sales")
        images = page.locator(".call-image img")
        expect(images).to_have_count(1)
        page.wait_for_function("document.querySelector('.call-image img').naturalWidth === 4")
        expect(page.locator(".call-raw")).to_contain_text('"call_id": "inspector-1"')
        expect(page.locator(".call-raw")).to_contain_text("data:image/png;base64")
        page.screenshot(path=str(shots / "call-image.png"), full_page=True)

        # An image-only result (an MCP screenshot tool's) has no empty text box.
        registry.invoke("snapshot", {}, call_id="snap-1")
        execution_log(registry).flush()  # in the log-db the page reads
        page.goto(base + "/log")
        page.locator("#log-table tbody tr").first.get_by_role("link", name="call").click()
        expect(page.locator(".call-text")).to_have_count(0)
        page.wait_for_function("document.querySelector('.call-image img').naturalWidth === 2")

        # A long output is paged.
        registry.invoke("report", {"lines": 150}, call_id="long-1")
        execution_log(registry).flush()  # in the log-db the page reads
        page.goto(base + "/log")
        page.locator("#log-table tbody tr").first.get_by_role("link", name="call").click()
        expect(page.locator("#result-page")).to_have_text("Page 1 of 3")
        expect(page.locator(".call-text")).to_contain_text("line 00000")
        page.get_by_role("link", name="Next").click()
        expect(page.locator("#result-page")).to_have_text("Page 2 of 3")
        expect(page.locator(".call-text")).not_to_contain_text("line 00000")
        page.screenshot(path=str(shots / "call-paged.png"), full_page=True)
        response = page.goto(base + "/calls/999999")
        assert response is not None and response.status == 404
    assert [e for e in errors if "404" not in e] == [], errors


def test_a_calls_page_keeps_values_redacted_by_default(page: Any, app: Any) -> None:
    from playwright.sync_api import expect

    registry, _ = app
    registry.invoke("get_weather", {"city": "Lima-secret"}, call_id="redacted-1")
    page.goto(_session_base(page) + "/log")
    page.locator("#log-table tbody tr").first.get_by_role("link", name="call").click()
    expect(page.locator(".call-arguments")).to_contain_text("<str, 11 chars>")
    expect(page.locator(".call-text")).to_have_text("<str, 26 chars>")
    assert "Lima-secret" not in page.content()


@pytest.fixture
def live_app() -> Iterator[tuple[ToolRegistry, InspectorServer]]:
    registry = ToolRegistry(name="live")
    registry.register(lambda city: f"rain in {city}", name="forecast")
    with _serving(registry) as server:
        yield registry, server


def test_every_page_is_live_over_one_event_stream(browsing: Any, live_app: Any,
                                                  shots: Path) -> None:
    from playwright.sync_api import expect

    registry, server = live_app
    with browsing() as (page, errors):
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(server.url)
        base = _session_base(page)
        # The log: one stream, no polling; calls arrive on it.
        page.goto(base + "/log")
        rows = page.locator("#log-table tbody tr")
        expect(rows).to_have_count(0)
        assert any("/api/events?after=0" in u for u in requests), requests
        page.wait_for_timeout(500)
        requests.clear()
        page.wait_for_timeout(3000)
        assert [u for u in requests if "/api/" in u] == []
        registry.invoke("forecast", {"city": "Bergen"}, call_id="sse-1")
        expect(rows).to_have_count(1, timeout=10_000)
        expect(rows.first).to_contain_text("sse-1")
        # A tool's recent calls follow too.
        page.goto(base + "/tools/forecast")
        expect(page.locator("#recent")).to_contain_text("sse-1")
        registry.invoke("forecast", {"city": "Tromsø"}, call_id="sse-2")
        expect(page.locator("#recent")).to_contain_text("sse-2", timeout=10_000)
        # The tools page shows a tool registered after it was opened.
        page.goto(base + "/tools")
        expect(page.locator("h1")).to_contain_text("1 of 1")
        registry.register(lambda: "ok", name="late_tool")
        expect(page.locator("table.tools")).to_contain_text("late_tool", timeout=10_000)
        expect(page.locator("h1")).to_contain_text("2 of 2")
        page.screenshot(path=str(shots / "tools-live.png"), full_page=True)
    assert errors == [], errors


def test_a_call_that_ends_before_the_stream_connects_still_shows(browsing: Any,
                                                                  live_app: Any) -> None:
    """A tool page's event stream starts after the newest call as the page was made: a call
    that ends between the page and its stream's connection (held back here) still refreshes
    the tool's recent calls."""
    from playwright.sync_api import expect

    registry, server = live_app
    with browsing() as (page, errors):
        page.goto(server.url)
        base = _session_base(page)
        registry.invoke("forecast", {"city": "Oslo"}, call_id="early-1")
        held: list[Any] = []
        page.route("**/api/events*", lambda route: held.append(route))
        page.goto(base + "/tools/forecast")
        expect(page.locator("#recent")).to_contain_text("early-1")
        for _ in range(200):  # until the page asked for its stream
            if held:
                break
            page.wait_for_timeout(25)
        assert held, "the page opened no event stream"
        registry.invoke("forecast", {"city": "Bergen"}, call_id="early-2")
        for route in held:
            route.continue_()
        page.unroute("**/api/events*")
        expect(page.locator("#recent")).to_contain_text("early-2", timeout=10_000)
    assert errors == [], errors


def test_a_copy_of_the_page_answered_late_never_replaces_a_newer_one(browsing: Any,
                                                                     live_app: Any) -> None:
    """A live part refreshes from a fresh copy of its page; on a slow server two fetches may
    overlap, and the older one, answered last, must not bring back what the newer one
    replaced (here: the first copy is held back and answered after the second)."""
    from playwright.sync_api import expect

    registry, server = live_app
    with browsing() as (page, errors):
        page.goto(server.url)
        base = _session_base(page)
        page.goto(base + "/tools/forecast")
        held: list[tuple[Any, Any]] = []

        def hold_the_first(route: Any) -> None:
            if held:
                route.continue_()
            else:  # the copy as it is now, answered later
                held.append((route, route.fetch()))

        page.route("**/tools/forecast", hold_the_first)
        registry.invoke("forecast", {"city": "Oslo"}, call_id="late-1")
        for _ in range(400):  # the refresh of the first call asks for a copy
            if held:
                break
            page.wait_for_timeout(25)
        assert held, "no refresh was asked for"
        registry.invoke("forecast", {"city": "Bergen"}, call_id="late-2")
        recent = page.locator("#recent")
        expect(recent).to_contain_text("late-2", timeout=10_000)
        route, stale = held[0]
        route.fulfill(response=stale)
        page.wait_for_timeout(1500)
        expect(recent).to_contain_text("late-2")
        page.unroute("**/tools/forecast")
    assert errors == [], errors


@pytest.fixture
def busy_app(tmp_path: Path) -> Iterator[tuple[ToolRegistry, InspectorServer, Path]]:
    """450 logged calls in a log-db, the first 100 of them two hours old."""
    import sqlite3
    import time

    db = tmp_path / "calls.sqlite"
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry.plugins.inspector]\nlog-db = "calls.sqlite"\n',
                      encoding="utf-8")
    registry = ToolRegistry(config=config)
    registry.register(lambda n: n, name="quick")

    def slow() -> str:
        time.sleep(0.05)
        return "done"

    registry.register(slow)
    for i in range(450):
        registry.invoke("quick", {"n": i}, call_id=f"q-{i}")
    for i in range(3):
        registry.invoke("slow", {}, call_id=f"s-{i}")
    execution_log(registry).flush()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE calls SET time = time - 7200 WHERE seq <= 100")
    with _serving(registry) as server:
        yield registry, server, db


def test_the_log_pages_back_filters_by_time_and_shows_percentiles(
        browsing: Any, busy_app: Any, shots: Path) -> None:
    from playwright.sync_api import expect

    registry, server, _ = busy_app
    with browsing() as (page, errors):
        page.goto(server.url)
        base = _session_base(page)
        page.goto(base + "/log")
        rows = page.locator("#log-table tbody tr")
        expect(rows).to_have_count(200)
        expect(rows.first).to_contain_text("s-2")
        page.get_by_role("link", name="Older calls").click()
        expect(rows).to_have_count(200)
        expect(rows.first).to_contain_text("q-252")
        expect(page.locator("#live-status")).to_have_text("Older calls: not live.")
        page.get_by_role("link", name="Older calls").click()
        expect(rows).to_have_count(53)
        expect(rows.last).to_contain_text("q-0")
        expect(page.get_by_role("link", name="Older calls")).to_have_count(0)
        page.get_by_role("link", name="Newest calls").click()
        expect(rows.first).to_contain_text("s-2")

        # Time range: the last hour, then what is older than an hour.
        page.get_by_label("Since (ago)").fill("1h")
        page.get_by_role("button", name="Filter").click()
        expect(rows).to_have_count(200)
        page.get_by_role("link", name="Older calls").click()
        expect(rows).to_have_count(153)
        expect(rows.last).to_contain_text("q-100")
        page.goto(base + "/log?until=1h")
        expect(rows).to_have_count(100)
        expect(rows.first).to_contain_text("q-99")
        page.goto(base + "/log?since=soon")
        expect(page.get_by_role("alert")).to_contain_text("since takes a duration")
        page.screenshot(path=str(shots / "log-paged.png"), full_page=True)

        # Percentiles and counts per tool, live.
        page.get_by_role("link", name="Stats", exact=True).click()
        table = page.locator("table.stats tbody tr")
        expect(table).to_have_count(2)
        quick = table.filter(has_text="quick").locator("td")
        slow = table.filter(has_text="slow").locator("td")
        expect(quick.nth(1)).to_have_text("450")
        expect(slow.nth(1)).to_have_text("3")
        assert float(slow.nth(3).inner_text()) >= 50.0  # p50 in ms
        assert float(quick.nth(3).inner_text()) < float(slow.nth(3).inner_text())
        # The small charts: a labelled bar of calls (the busiest tool's is full) and the
        # latency percentiles as nested bars (the slowest p99 is full).
        expect(page.get_by_role("img", name="quick: 450 calls, 0 errors")).to_have_count(1)
        latency = page.get_by_role("img", name=re.compile(r"^slow: p50 [\d.]+ ms, p90"))
        expect(latency).to_have_count(1)
        assert float(latency.locator("rect.bar-p99").get_attribute("width") or 0) == 100.0
        assert float(page.get_by_role("img", name="quick: 450 calls, 0 errors")
                     .locator("rect.bar-ok").get_attribute("width") or 0) == 100.0
        registry.invoke("slow", {}, call_id="s-3")
        expect(slow.nth(1)).to_have_text("4", timeout=10_000)
        page.screenshot(path=str(shots / "stats.png"), full_page=True)
    assert [e for e in errors if "status of 400" not in e] == [], errors  # since=soon


class Order(BaseModel):
    """An order (a nested object in a tool's parameters)."""

    item: str
    qty: int = Field(ge=1, le=10)


@pytest.fixture
def form_app() -> Iterator[tuple[ToolRegistry, InspectorServer]]:
    registry = ToolRegistry(name="forms")

    @registry.register
    def place(order: Order, tags: list[str], counts: list[int] | None = None,
              size: Literal["small", "large"] = "small",
              extra: dict[str, Any] | None = None) -> str:
        """Place an order."""
        return json.dumps({"order": order.model_dump(), "tags": tags, "counts": counts,
                           "size": size, "extra": extra}, sort_keys=True)

    with _serving(registry) as server:
        yield registry, server


def _invalid(page: Any) -> list[str]:
    """The names of the try-it form's fields the browser holds invalid."""
    names: list[str] = page.evaluate(
        "() => [...document.querySelectorAll('form.try :invalid:not(fieldset)')]"
        ".map(e => e.name)")
    return names


def test_schema_aware_forms_are_checked_in_the_browser(browsing: Any, form_app: Any,
                                                       shots: Path) -> None:
    from playwright.sync_api import expect

    _, server = form_app
    with browsing() as (page, errors):
        posts: list[str] = []
        page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
        page.goto(server.url)
        page.goto(_session_base(page) + "/tools/place")
        # The nested object is a group of its own fields; the enum shows its values.
        group = page.get_by_role("group", name="order")
        expect(group.get_by_label("order.item")).to_be_visible()
        size = page.get_by_label("size")
        expect(size.locator("option")).to_have_text(["(default)", "small", "large"])
        expect(size).to_have_value('"small"')  # the schema's default
        # Out of the schema's range, a bad list item, bad JSON: the browser refuses.
        page.get_by_label("order.item").fill("tea")
        page.get_by_label("order.qty").fill("50")
        page.get_by_label("tags").fill("green\nblack")
        page.get_by_label("counts").fill("1\ntwo")
        page.get_by_label("extra").fill("{not json")
        page.get_by_role("button", name="Run").click()
        assert sorted(_invalid(page)) == ["arg.counts", "arg.extra", "arg.order.qty"]
        message = page.get_by_label("extra").evaluate("e => e.validationMessage")
        assert "not valid JSON" in message
        assert "two" in page.get_by_label("counts").evaluate("e => e.validationMessage")
        page.get_by_label("extra").fill("[1]")
        assert "must be a JSON object" in page.get_by_label("extra").evaluate(
            "e => e.validationMessage")
        page.screenshot(path=str(shots / "form-invalid.png"), full_page=True)
        assert posts == []  # nothing was sent
        # Fixed: the call runs with nested, typed arguments.
        page.get_by_label("order.qty").fill("3")
        page.get_by_label("counts").fill("1\n2")
        page.get_by_label("extra").fill('{"gift": true}')
        size.select_option(label="large")
        page.get_by_role("button", name="Run").click()
        expect(page.locator(".result-text")).to_have_text(json.dumps(
            {"order": {"item": "tea", "qty": 3}, "tags": ["green", "black"], "counts": [1, 2],
             "size": "large", "extra": {"gift": True}}, sort_keys=True))
        assert len(posts) == 1
        # All arguments as JSON replace the fields (and their checks).
        page.get_by_label("All arguments as JSON").fill(
            '{"order": {"item": "milk", "qty": 1}, "tags": []}')
        expect(page.get_by_label("order.qty")).to_be_disabled()
        page.get_by_role("button", name="Run").click()
        expect(page.locator(".result-text")).to_contain_text('"item": "milk"')
        page.screenshot(path=str(shots / "form-ok.png"), full_page=True)
    assert errors == [], errors
