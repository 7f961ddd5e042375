"""Batches, calls in flight and audio in a real browser (Debian's chromium through
Playwright): a batch's calls as a tree with a waterfall whose bars carry text labels, a call's
trace and span ids, the running page with the progress a tool reports and the Cancel of the
calls in flight, an audio part played by a native ``<audio controls>``."""

from __future__ import annotations

import io
import json
import re
import threading
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolregistry import ToolCall, ToolContext, ToolRegistry
from toolregistry.plugin import hookimpl
from toolregistry_inspector import InspectorServer, serve

TOKEN = "live-token-0123456789"
WAIT = 20_000  # ms: a loaded machine may be slow to run the calls and refresh the page


class _Tracing:
    """A tracing plugin in miniature, through the kernel's seam: its call observer gives
    every call a trace id (one per batch) and a span id of its own."""

    class Observer:
        def __init__(self) -> None:
            self.spans = iter(range(1, 1_000_000))

        def call_started(self, call: ToolCall) -> None:
            call.trace_id = f"{abs(hash(call.batch_id)):032x}"[-32:]
            call.span_id = f"{next(self.spans):016x}"

        def call_finished(self, call: ToolCall, result: Any, token: Any) -> None:
            return None

    def __init__(self) -> None:
        self.observer = self.Observer()

    @hookimpl
    def call_observer(self, registry: Any, tool: Any) -> Any:
        return self.observer


@pytest.fixture
def traced_app() -> Iterator[tuple[ToolRegistry, InspectorServer]]:
    registry = ToolRegistry(plugins=[_Tracing()])

    @registry.register
    def pause(ms: int) -> str:
        """Wait ``ms`` milliseconds."""
        time.sleep(ms / 1000)
        return f"waited {ms} ms"

    server = serve(registry, port=0, token=TOKEN, block=False, quiet=True)
    assert server is not None
    yield registry, server
    server.close()
    registry.close()


def _base(page: Any) -> str:
    """``http://127.0.0.1:PORT/s/<session>`` once the printed URL landed on the tools page."""
    return str(page.url).rsplit("/tools", 1)[0]


def test_a_batch_page_shows_its_calls_as_a_tree_with_a_labelled_waterfall(
        browsing: Any, traced_app: Any, shots: Path) -> None:
    from playwright.sync_api import expect

    registry, server = traced_app
    calls = [{"id": f"w{ms}", "type": "function",
              "function": {"name": "pause", "arguments": json.dumps({"ms": ms})}}
             for ms in (30, 120, 60)]
    results = registry.execute_tool_calls(calls)
    assert [r.outcome for r in results] == ["ok", "ok", "ok"]
    with browsing() as (page, errors):
        page.goto(server.url)
        base = _base(page)
        page.goto(base + "/log")
        row = page.locator("#log-table tbody tr", has_text="w120")
        row.get_by_role("link", name="call").click()
        facts = page.locator(".call-facts")
        expect(facts).to_contain_text("Trace id")
        trace = page.locator(".call-trace").inner_text()
        assert len(trace) == 32
        expect(page.locator(".call-span")).to_have_text(re.compile(r"^[0-9a-f]{16}$"))
        batch = page.locator(".call-batch")
        batch_id = batch.inner_text()
        assert batch_id.startswith("b")
        page.screenshot(path=str(shots / "call-ids.png"), full_page=True)

        batch.focus()
        page.keyboard.press("Enter")  # the batch link works from the keyboard
        expect(page.locator("h1")).to_contain_text(f"Batch {batch_id}")
        expect(page.locator("h1")).to_contain_text("3 calls")
        expect(page.locator(".batch-trace")).to_have_text(trace)
        tree = page.get_by_role("list", name="Calls")
        expect(tree.locator(".batch-node")).to_have_text(f"Batch {batch_id}")
        bars = page.get_by_role("img")
        expect(bars).to_have_count(3)
        labels = [bars.nth(i).get_attribute("aria-label") or "" for i in range(3)]
        assert all(label.startswith("pause: starts at +") and label.endswith(", ok")
                   for label in labels), labels
        # Each bar's text label is shown too, and each row opens its call.
        expect(page.locator(".waterfall-label")).to_have_text(labels)
        widths = [float(page.locator(".waterfall-bar rect").nth(i).get_attribute("width") or 0)
                  for i in range(3)]
        by_id = dict(zip(page.locator(".waterfall-id").all_inner_texts(), widths, strict=True))
        assert by_id["w120"] > by_id["w30"]  # bars as long as the calls
        page.screenshot(path=str(shots / "batch.png"), full_page=True)
        page.locator(".waterfall-call").first.click()
        expect(page.locator("h1")).to_contain_text("pause")
        missing = page.request.get(base + "/batches/nope")
        assert missing.status == 404 and "no batch &#39;nope&#39;" in missing.text()
    assert errors == [], errors


@pytest.fixture
def running_app() -> Iterator[tuple[ToolRegistry, InspectorServer, threading.Event]]:
    registry = ToolRegistry()
    release = threading.Event()

    @registry.register
    def crunch(steps: int, ctx: ToolContext) -> str:
        """Work through ``steps`` steps, saying how far it got."""
        for step in range(steps):
            if ctx.cancelled:
                return f"stopped at {step}"
            ctx.report_progress(step, steps, f"step {step}")
            if step == steps // 2:
                release.wait(30)  # half way: wait until the test has looked
            time.sleep(0.01)
        return "done"

    server = serve(registry, port=0, token=TOKEN, block=False, quiet=True)
    assert server is not None
    yield registry, server, release
    release.set()
    server.close()
    registry.close()


def test_running_calls_show_progress_and_the_inspectors_own_can_be_cancelled(
        browsing: Any, running_app: Any, shots: Path) -> None:
    from playwright.sync_api import expect

    registry, server, release = running_app
    with browsing() as (runner, errors), browsing() as (watcher, watcher_errors):
        runner.goto(server.url)
        base = _base(runner)
        watcher.goto(base + "/running")
        expect(watcher.locator("#running-none")).to_be_visible()

        # The application's own call: shown with its progress, and cancelled through the
        # kernel: its caller is answered at once (the tool waits on, on its worker).
        answers: list[Any] = []
        app_call = threading.Thread(target=lambda: answers.append(
            registry.invoke("crunch", {"steps": 10}, call_id="app-1")))
        app_call.start()
        rows = watcher.locator("#running-table tbody tr")
        expect(rows).to_have_count(1, timeout=WAIT)  # live: the page was not reloaded
        expect(rows.first).to_contain_text("app-1")
        progress = watcher.get_by_label("progress of app-1")
        expect(progress).to_have_attribute("value", "0.5", timeout=WAIT)
        expect(rows.first).to_contain_text("step 5", timeout=WAIT)
        rows.first.get_by_role("button", name="Cancel app-1").click()
        expect(watcher.locator("#running-none")).to_be_visible(timeout=WAIT)
        app_call.join(30)
        assert not release.is_set()
        (answer,) = answers
        assert answer.error_kind == "cancelled"
        assert answer.content == "Error: tool 'crunch' was cancelled: cancelled in the inspector"

        # A call run from the tool page: the running page can cancel it.
        runner.goto(base + "/tools/crunch")
        runner.get_by_label("steps").fill("100")
        runner.get_by_role("button", name="Run").click(no_wait_after=True)
        expect(rows).to_have_count(1, timeout=WAIT)
        ours = watcher.locator("#running-table tbody tr", has_text="inspector-")
        expect(ours.get_by_label("progress of inspector-1")).to_have_attribute("value", "0.5", timeout=WAIT)
        watcher.screenshot(path=str(shots / "running.png"), full_page=True)
        cancel = ours.get_by_role("button", name="Cancel inspector-1")
        cancel.focus()
        watcher.keyboard.press("Enter")
        expect(runner.get_by_text("call inspector-1 was cancelled in the inspector")).to_be_visible(
            timeout=WAIT)
        release.set()
        app_call.join(30)
        expect(rows).to_have_count(0, timeout=WAIT)
        expect(watcher.locator("#running-none")).to_be_visible()
        runner.goto(base + "/log")
        expect(runner.locator("#log-table tbody tr", has_text="inspector-1")).to_contain_text(
            "cancelled", timeout=WAIT)
    assert errors == [] and watcher_errors == [], (errors, watcher_errors)


def test_a_call_that_ends_before_the_stream_connects_leaves_the_running_page(
        browsing: Any, running_app: Any) -> None:
    """The running page shows a call; the call ends before the page's event stream connects
    (held back here): the stream's first look still tells the page, which refreshes, and the
    row goes (else it would stay, the calls in flight no longer changing)."""
    from playwright.sync_api import expect

    registry, server, release = running_app
    with browsing() as (watcher, errors):
        watcher.goto(server.url)
        base = _base(watcher)
        held: list[Any] = []
        watcher.route("**/api/events*", lambda route: held.append(route))
        answers: list[Any] = []
        app_call = threading.Thread(target=lambda: answers.append(
            registry.invoke("crunch", {"steps": 10}, call_id="gone-1")))
        app_call.start()
        rows = watcher.locator("#running-table tbody tr")
        for _ in range(100):  # until the page shows the call (no stream: by reloading)
            watcher.goto(base + "/running")
            if rows.count() == 1:
                break
            watcher.wait_for_timeout(100)
        expect(rows.first).to_contain_text("gone-1")
        assert registry.cancel_call("gone-1", "ended before the stream")
        app_call.join(30)
        assert answers and answers[0].error_kind == "cancelled"
        for _ in range(100):
            if held:
                break
            watcher.wait_for_timeout(25)
        for route in held:
            route.continue_()
        watcher.unroute("**/api/events*")
        expect(watcher.locator("#running-none")).to_be_visible(timeout=WAIT)
        release.set()
    assert errors == [], errors


def _wav() -> bytes:
    """A real WAV file: a tenth of a second of silence."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\0\0" * 800)
    return out.getvalue()


def test_an_audio_part_plays_in_a_labelled_audio_element(browsing: Any, tmp_path: Path,
                                                         shots: Path) -> None:
    """A log entry whose result has an audio part, in the shape the log keeps it
    (``{"type": "audio", "media_type", "bytes", "url"}`` like an image part)."""
    import base64

    from playwright.sync_api import expect

    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.toolregistry.plugins.inspector]\nlog-db = "calls.sqlite"\n',
                      encoding="utf-8")
    registry = ToolRegistry(config=config)
    registry.register(lambda: "hi", name="speak")
    registry.invoke("speak", {}, call_id="s-1")  # the file exists, made by the log's writer
    from toolregistry_inspector import execution_log

    execution_log(registry).flush()
    data = _wav()
    parts = [{"type": "text", "text": "said it"},
             {"type": "audio", "media_type": "audio/wav", "bytes": len(data),
              "url": "data:audio/wav;base64," + base64.b64encode(data).decode()},
             {"type": "audio", "media_type": "audio/mpeg", "bytes": 4096}]
    import sqlite3

    with sqlite3.connect(tmp_path / "calls.sqlite") as conn:
        conn.execute("INSERT INTO calls (time, registry, tool, call_id, arguments, outcome, "
                     "duration, format, result) VALUES (?,?,?,?,?,?,?,?,?)",
                     (time.time(), "registry", "speak", "s-2", "{}", "ok", 0.01, "registry",
                      json.dumps(parts)))
    conn.close()
    server = serve(registry, port=0, token=TOKEN, block=False, quiet=True)
    assert server is not None
    try:
        with browsing() as (page, errors):
            page.goto(server.url)
            page.goto(_base(page) + "/log")
            page.locator("#log-table tbody tr", has_text="s-2").get_by_role(
                "link", name="call").click()
            player = page.get_by_label("audio 1 of the result (audio/wav)")
            expect(player).to_have_attribute("controls", "")
            page.wait_for_function("document.querySelector('.call-audio audio').duration > 0")
            expect(page.locator(".call-audio figcaption").first).to_contain_text(
                f"{len(data)} bytes")
            # An audio part kept without its data says why it cannot be played.
            expect(page.locator(".call-audio").nth(1)).to_contain_text("not kept")
            expect(page.locator(".call-audio audio")).to_have_count(1)
            page.screenshot(path=str(shots / "call-audio.png"), full_page=True)
        assert errors == [], errors
    finally:
        server.close()
        registry.close()
