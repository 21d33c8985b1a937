"""The dashboard driven in headless Chromium against a live server: an auditor logs in, opens a thread,
expands the tree, opens a checkpoint, sees the verified badge, diffs two checkpoints, forks, and finds the
fork in the audit log; a tampered checkpoint shows a red badge."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from pytest_django.live_server_helper import LiveServer

from checkpoints.models import AuditEvent, Checkpoint, Thread
from tests.browser.helpers import apply_filter, follow, log_in, open_section, submit
from tests.dashboard.world import World
from tests.factories import make_checkpoint

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RED = "rgb(180, 35, 24)"  # --danger
GREEN = "rgb(20, 108, 46)"  # --ok


def test_it_walks_an_auditor_through_thread_tree_checkpoint_diff_fork_and_audit(
    page: Any, live_server: LiveServer, world: World, screenshot: Any
) -> None:
    log_in(page, live_server)  # alice's only workspace opens directly
    assert page.url == live_server.url + "/dashboard/w/acme/"
    assert page.locator("h1").inner_text().startswith("Acme Research")
    screenshot(page, "overview")

    open_section(page, "Threads")
    assert page.locator("table.threads tbody tr").count() == 2
    screenshot(page, "thread-list")
    follow(page, page.locator("table.threads").get_by_role("link", name="run-1", exact=True).first)
    assert page.locator("h1").inner_text() == "run-1"

    # The root namespace's tree is open; the "tools" namespace is collapsed until expanded.
    tools = page.locator('details.tree[data-namespace="tools"]')
    tools_row = tools.locator("li.tree-row").first
    assert not tools_row.is_visible()
    tools.locator("summary").click()
    assert tools_row.is_visible()
    root_tree = page.locator('details.tree[data-namespace=""]')
    assert root_tree.locator("li.tree-row").count() == 7
    assert root_tree.locator("li.is-head .badge-head").inner_text() == "HEAD"
    assert root_tree.locator(".badge-handoff").is_visible()
    assert root_tree.locator("li.is-tomb").count() == 1
    screenshot(page, "thread")

    follow(page, root_tree.locator(f'a.t-link[href*="{world.step2.checkpoint_id}"]'))
    badge = page.locator("[data-integrity]")
    assert badge.get_attribute("data-integrity") == "verified"
    assert "Checksum verified" in badge.inner_text()
    assert badge.evaluate("e => getComputedStyle(e).color") == GREEN
    # Collapsible JSON: collapse with the button (JavaScript), the values disappear; expand brings them back.
    state = page.locator(".json-card").first
    value = state.locator(".j-str", has_text="refactor billing")
    assert value.is_visible()
    state.get_by_role("button", name="Collapse all").click()
    assert not value.is_visible()
    state.get_by_role("button", name="Expand all").click()
    assert value.is_visible()
    screenshot(page, "checkpoint")

    # Diff against another checkpoint picked from the list (the root, two steps back).
    page.get_by_label("Against a checkpoint of this thread").select_option(world.root.checkpoint_id)
    follow(page, page.get_by_role("button", name="Show diff"))
    assert "/diff/" in page.url
    rows = page.locator("table.diff tbody tr")
    assert rows.count() >= 2
    paths = page.locator("td.diff-path code").all_inner_texts()
    assert "/state/score" in paths and "/metadata/source" in paths
    screenshot(page, "diff")

    page.go_back()
    follow(page, page.get_by_role("link", name="Fork from here…"))
    page.get_by_label("New thread id").fill("browser-fork")
    submit(page, "Fork", lands_on="/threads/browser-fork/", flash="Forked into thread browser-fork.")
    assert "run-1" in page.locator(".facts").inner_text()
    fork = Thread.objects.get(thread_id="browser-fork")
    assert fork.forked_from_checkpoint_id == world.step2.checkpoint_id

    open_section(page, "Audit log")
    apply_filter(page, "Actor", "alice")
    first = page.locator("table tbody tr").first
    assert "checkpoint.fork" in first.inner_text() and "browser-fork" in first.inner_text()
    assert "user:alice" in first.inner_text()
    assert AuditEvent.objects.filter(action="checkpoint.fork", actor_label="user:alice").count() == 1
    apply_filter(page, "Actor", "")
    screenshot(page, "audit-log")


def test_it_shows_a_red_badge_for_a_tampered_checkpoint(
    page: Any, live_server: LiveServer, world: World
) -> None:
    Checkpoint.objects.filter(pk=world.step1.pk).update(state='{"goal":"something else"}')
    log_in(page, live_server, f"/dashboard/w/acme/threads/run-1/checkpoints/{world.step1.checkpoint_id}/?ns=")
    badge = page.locator("[data-integrity]")
    assert badge.get_attribute("data-integrity") == "mismatch"
    assert "Checksum mismatch" in badge.inner_text()
    assert badge.evaluate("e => getComputedStyle(e).color") == RED
    assert badge.evaluate("e => getComputedStyle(e).borderTopColor") == RED


def test_it_keeps_a_5_mb_state_responsive_with_a_download(
    page: Any, live_server: LiveServer, world: World
) -> None:
    state = {"rows": [{"id": n, "text": "x" * 90} for n in range(50_000)], "blob": "y" * 100_000}
    big = make_checkpoint(world.workspace, "big", state=state)
    assert big.size_bytes > 5_000_000
    log_in(page, live_server, f"/dashboard/w/acme/threads/big/checkpoints/{big.checkpoint_id}/?ns=")
    started = time.monotonic()
    page.reload()
    assert time.monotonic() - started < 5
    assert page.locator(".notice", has_text="Large document").is_visible()
    assert page.locator("details.j-node").count() < 3_000
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download raw state").click()
    download = download_info.value
    assert download.suggested_filename == f"big-{big.checkpoint_id}-state.json"
    with open(download.path(), encoding="utf-8") as saved:
        assert json.loads(saved.read()) == state


def test_it_can_be_used_with_the_keyboard_alone(page: Any, live_server: LiveServer, world: World) -> None:
    log_in(page, live_server, "/dashboard/w/acme/threads/run-1/")
    page.keyboard.press("Tab")
    skip = page.locator(".skip-link")
    assert skip.evaluate("e => e === document.activeElement")
    assert skip.is_visible()  # it shows itself when focused
    # Focus is visible: an outline on the focused control.
    page.keyboard.press("Tab")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"
    tools = page.locator('details.tree[data-namespace="tools"] summary')
    tools.focus()
    page.keyboard.press("Enter")
    assert page.locator('details.tree[data-namespace="tools"]').evaluate("e => e.open")


def test_it_browses_medallion_revisions_and_the_retention_preview(
    page: Any, live_server: LiveServer, world: World, screenshot: Any
) -> None:
    due = make_checkpoint(
        world.workspace, "run-1", namespace="scratch", agent_id="planner", state={"tmp": True}, ttl_seconds=60
    )
    Checkpoint.objects.filter(pk=due.pk).update(expires_at=due.created_at)
    log_in(page, live_server, "/dashboard/w/acme/medallions/")
    apply_filter(page, "Graph nodes", "billing")
    assert page.locator("table tbody tr").count() == 1
    screenshot(page, "medallions")
    follow(page, page.get_by_role("link", name=re.compile("Billing is being split")))
    assert page.get_by_role("heading", name="Changes from version 1 to 2").is_visible()
    assert "/summary/high_level" in page.locator("table.diff").inner_text()
    screenshot(page, "medallion")

    open_section(page, "Retention")
    expired = page.locator("table.preview tbody tr").first
    assert expired.locator("[data-rule-count]").inner_text() == "1"
    assert due.checkpoint_id[:18] in expired.inner_text()
    screenshot(page, "retention")
    follow(page, page.get_by_role("link", name="Sweep now…"))
    assert page.get_by_role("button", name="Sweep now").is_visible()  # a confirmation step, not the sweep
    assert Checkpoint.objects.get(pk=due.pk).expired_at is None


def test_it_works_without_javascript(
    browser: Any, live_server: LiveServer, world: World, settings: Any
) -> None:
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        log_in(
            page, live_server, f"/dashboard/w/acme/threads/run-1/checkpoints/{world.step2.checkpoint_id}/?ns="
        )
        # Collapsing is native <details>: it works, and the JavaScript-only buttons are not shown.
        assert not page.get_by_role("button", name="Collapse all").first.is_visible()
        node = page.locator("details.j-node").first
        assert node.evaluate("e => e.open")
        node.locator("summary").first.click()
        assert not node.evaluate("e => e.open")
        # Actions are plain forms: expire through the confirmation page.
        follow(page, page.get_by_role("link", name="Expire now…"))
        follow(page, page.get_by_role("button", name="Expire now"))
        assert "expired" in page.locator(".flash").inner_text()
        assert page.locator("[data-integrity]").get_attribute("data-integrity") == "erased"
    finally:
        context.close()
