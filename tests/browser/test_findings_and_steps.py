"""An auditor's walk through a run that paid a wrong refund, in headless Chromium: find it from a word the
customer typed, read what ran at each step (nodes, the failure, tokens, who wrote it), compare the bad step
with the one before it without LangGraph's bookkeeping, and see the look recorded in the audit log. With
CAIRN_SCREENSHOTS=1 it writes docs/screenshots/steps-timeline.png and docs/screenshots/diff-steps.png."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pytest_django.live_server_helper import LiveServer

from checkpoints.services.messages import messages_append
from tests.browser.helpers import SCREENSHOT_WIDTH, follow, log_in, open_section
from tests.dashboard.refund_run import build_refund_run
from tests.dashboard.world import World

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_walks_a_failed_run_step_by_step_and_records_the_look(
    page: Any, live_server: LiveServer, world: World, screenshot: Any
) -> None:
    messages_append(
        workspace=world.workspace,
        thread_id="refund-run",
        messages=[{"role": "user", "content": "I want a refund for order 77"}],
    )
    run = build_refund_run(world.workspace)
    log_in(page, live_server, "/dashboard/w/acme/search/", viewport=SCREENSHOT_WIDTH)
    page.get_by_label("Words").fill("refund")
    follow(page, page.get_by_role("button", name="Apply"))
    follow(page, page.locator("a.msg-seq").first)

    # The timeline: what ran at each step.
    step = page.locator(f"#c-{run.answered.pk}")
    step.scroll_into_view_if_needed()
    assert step.locator("[data-step-nodes]").inner_text() == "ran agent"
    assert step.locator("[data-step-status]").inner_text() == "error"
    assert "in pay: ValueError('refund above limit')" in step.locator("[data-step-status-text]").inner_text()
    assert step.locator("[data-step-usage]").inner_text() == "120 in · 30 out · 150 tokens"
    assert step.locator("[data-step-since]").inner_text() == "+2.5 s"
    screenshot(page, "steps-timeline")

    # Its checkpoint page, then the diff with the step before it.
    follow(page, step.get_by_role("link", name=re.compile(r"^[0-9a-f]{8}")).first)
    assert "refund above limit" in page.locator("dd:has([data-step])").inner_text()
    diff_url = f"/dashboard/w/acme/threads/refund-run/checkpoints/{run.answered.checkpoint_id}/diff/?ns="
    page.goto(live_server.url + diff_url)
    paths = page.locator("table.diff td.diff-path code")
    assert paths.all_inner_texts() == ["/state/channel_values/messages/1"]
    assert "Refunding 500 EUR" in page.locator("table.diff td.diff-after").inner_text()
    screenshot(page, "diff-steps")
    follow(page, page.get_by_role("link", name="Show LangGraph's bookkeeping"))
    assert "/state/ts" in paths.all_inner_texts()
    follow(page, page.get_by_role("link", name=re.compile("Previous pair")))
    assert run.asked.checkpoint_id[-12:] in page.locator(".diff-sides").inner_text()

    # Who looked: the audit log lists the views with the user.
    open_section(page, "Audit log")
    page.get_by_label("Action").select_option("checkpoint.view_diff")
    follow(page, page.get_by_role("button", name="Apply"))
    rows = page.locator("table tbody tr:has(code.action)")
    assert rows.count() == 3  # the diff, with its bookkeeping, the previous pair
    assert "user:alice" in rows.first.inner_text()
