"""The inspector's approvals page over the policy plugin's queue (issue 23 item 1): calls held
by a rule are approved (with edited arguments) and denied in Debian's chromium through
Playwright; the application resumes them and the execution log shows what ran."""

from __future__ import annotations

import os
from pathlib import Path

from toolregistry import ToolRegistry
from toolregistry_inspector import execution_log, serve

TOKEN = "policy-token-0123456789"


def test_approve_with_edited_arguments_and_deny_in_the_browser(tmp_path: Path, chromium: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    (tmp_path / "pyproject.toml").write_text(
        '[[tool.toolregistry.plugins.policy.rules]]\ndecision = "ask"\ntools = ["send_*"]\n'
        'reason = "mail leaves the company"\n', encoding="utf-8")
    registry = ToolRegistry(config=tmp_path / "pyproject.toml")

    @registry.register
    def send_mail(to: str, body: str) -> str:
        """Send a mail."""
        return f"sent to {to}: {body}"

    log = execution_log(registry)  # logged from here on, the held calls included
    results = registry.execute_tool_calls([
        {"id": "m1", "name": "send_mail", "arguments": {"to": "ceo@example.com", "body": "hi"}},
        {"id": "m2", "name": "send_mail", "arguments": {"to": "all@example.com", "body": "yo"}},
    ])
    assert [r.outcome for r in results] == ["approval_required"] * 2
    waiting = [r.approval.to_dict() for r in results if r.approval is not None]
    shots = Path(os.environ.get("INSPECTOR_SCREENSHOTS") or tmp_path)
    server = serve(registry, port=0, token=TOKEN, block=False, quiet=True)
    assert server is not None
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium,
                                         args=["--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_page()
                page.goto(server.url)
                page.get_by_role("link", name="Approvals").click()
                sections = page.locator("section.approval")
                expect(sections).to_have_count(2)
                expect(sections.first).to_contain_text("mail leaves the company")
                page.screenshot(path=str(shots / "approvals.png"), full_page=True)
                first = sections.first
                first.get_by_label("Arguments (edit before approving)").fill(
                    '{"to": "cfo@example.com", "body": "hi"}')
                first.get_by_role("button", name="Approve").click()
                expect(sections).to_have_count(1)
                sections.first.get_by_label("Reason").fill("not to everyone")
                sections.first.get_by_role("button", name="Deny").click()
                expect(page.locator("main")).to_contain_text("No call is waiting for approval")
            finally:
                browser.close()
        policy = registry.plugin_state("policy")["policy"]
        resumed = policy.resume(waiting)
        assert resumed[0].ok and resumed[0].text.endswith("sent to cfo@example.com: hi")
        assert resumed[0].metadata["approval"]["approver"] == "inspector"
        assert resumed[1].error_kind == "denied" and "not to everyone" in resumed[1].text
        assert [e.outcome for e in log.entries(call_id="m1")][-1] == "ok"
        assert log.entries(call_id="m1")[0].outcome == "approval_required"
    finally:
        server.close()
        registry.close()
