"""Headless Chromium, at 1280 and 800 px: the thread page's retention controls (keep until, pin) preview
their change before it is saved; the agent page and its charts; the polish (one-row top bar at 1280 px, ISO
date inputs, timestamps that never break inside the time, readable job results, charts as wide as their
card, search counts, "/" to search). With CAIRN_SCREENSHOTS=1 they write docs/screenshots/
thread-keep-until.png, thread-pin.png and agent.png."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer

from checkpoints.models import Job, Thread
from tests.browser.helpers import (
    SCREENSHOT_WIDTH,
    apply_filter,
    follow,
    log_in,
    open_section,
    open_workspace_section,
)
from tests.dashboard.world import World

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NARROW = {"width": 800, "height": 900}
WIDTHS = [SCREENSHOT_WIDTH, NARROW]


def _text(locator: Any) -> str:
    return re.sub(r"\s+", " ", locator.inner_text()).strip()


def test_keep_until_and_pin_preview_the_change_then_save_it(
    page: Any, live_server: LiveServer, world: World, screenshot: Any
) -> None:
    log_in(page, live_server, "/dashboard/w/acme/threads/run-1-fork/", viewport=SCREENSHOT_WIDTH)
    assert page.locator("[data-idle-expiry]").get_attribute("data-idle-expiry") == "none"
    follow(page, page.get_by_role("link", name="Keep until…"))
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    assert _text(crumbs) == "Threads / run-1-fork / Keep this thread until…"
    day = (timezone.now() + timedelta(days=40)).date().isoformat()
    field = page.get_by_label("Keep until (UTC date)")
    assert field.get_attribute("placeholder") == "YYYY-MM-DD"
    field.fill(day)
    follow(page, page.get_by_role("button", name="Preview"))
    sentence = _text(page.locator("[data-change-sentence]"))
    end = (timezone.now() + timedelta(days=41)).date().isoformat()
    assert sentence == f"This thread would be deleted on {end} 00:00:00 UTC instead of never."
    assert Thread.objects.get(thread_id="run-1-fork").ttl_seconds is None
    screenshot(page, "thread-keep-until")
    follow(page, page.get_by_role("button", name="Save"))
    assert "Deleted as idle:" in _text(page.locator(".flash"))
    assert page.locator("[data-idle-expiry]").get_attribute("data-idle-expiry") == "thread"

    follow(page, page.get_by_role("link", name="Pin thread…"))
    assert _text(page.locator("[data-change-sentence]")).startswith(
        "This thread would never be deleted as idle"
    )
    assert "Pinning the thread does not pin its checkpoints" in page.locator("main").inner_text()
    screenshot(page, "thread-pin")
    follow(page, page.get_by_role("button", name="Pin thread"))
    assert page.locator("[data-idle-expiry]").get_attribute("data-idle-expiry") == "pinned"
    assert page.get_by_role("link", name="Unpin thread…").count() == 1


def test_the_fork_page_has_breadcrumbs_back_to_the_checkpoint(
    page: Any, live_server: LiveServer, world: World
) -> None:
    step = world.step1.checkpoint_id
    log_in(
        page, live_server, f"/dashboard/w/acme/threads/run-1/checkpoints/{step}/fork/?ns=", viewport=NARROW
    )
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    follow(page, crumbs.get_by_role("link", name=re.compile("Checkpoint")))
    assert page.locator("h1").inner_text() == f"Checkpoint {step}"


@pytest.mark.parametrize("viewport", WIDTHS, ids=["1280", "800"])
def test_the_agent_page_shows_its_work_with_charts_as_wide_as_their_card(
    page: Any, live_server: LiveServer, world: World, screenshot: Any, viewport: dict[str, int]
) -> None:
    log_in(page, live_server, "/dashboard/w/acme/", viewport=viewport)
    open_section(page, "Handoffs")
    follow(page, page.locator("table.handoffs a.agent", has_text="reviewer").first)
    assert page.locator("h1").inner_text() == "Agent reviewer"
    assert page.locator('[data-count="taken"]').inner_text() == "1"
    assert page.locator('[data-count="checkpoints"]').inner_text() == "3"
    card = page.locator("#charts").bounding_box()
    for chart_id in ("agent-activity-chart", "agent-tokens-chart"):
        chart = page.locator(f"#{chart_id}").bounding_box()
        assert chart["width"] >= card["width"] * 0.9, (chart_id, chart, card)
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    if viewport is SCREENSHOT_WIDTH:
        screenshot(page, "agent")


def test_the_top_bar_is_one_row_at_1280_px(page: Any, live_server: LiveServer, world: World) -> None:
    log_in(page, live_server, "/dashboard/w/acme/threads/", viewport=SCREENSHOT_WIDTH)
    tops = page.eval_on_selector_all(
        ".topbar-inner > *, .mainnav li", "items => items.map(i => Math.round(i.getBoundingClientRect().top))"
    )
    bar = page.locator(".topbar").bounding_box()
    links = page.locator(".mainnav a").first.bounding_box()
    assert max(tops) - min(tops) <= links["height"], tops
    assert bar["height"] < 2 * links["height"] + 8


@pytest.mark.parametrize("viewport", WIDTHS, ids=["1280", "800"])
def test_timestamps_never_break_inside_the_time(
    page: Any, live_server: LiveServer, world: World, viewport: dict[str, int]
) -> None:
    for path in (
        "/dashboard/w/acme/handoffs/",
        "/dashboard/w/acme/threads/run-1/",
        "/dashboard/w/acme/jobs/",
    ):
        if path.endswith("/handoffs/"):
            log_in(page, live_server, path, viewport=viewport)
        else:
            page.goto(live_server.url + path)
        lines = page.eval_on_selector_all("main time", "items => items.map(i => i.getClientRects().length)")
        assert lines and set(lines) == {1}, (path, lines)


def test_date_inputs_read_iso_and_search_counts_its_results(
    page: Any, live_server: LiveServer, world: World
) -> None:
    open_workspace_section(page, live_server, "Search")
    date_from = page.get_by_label("From")
    assert (date_from.get_attribute("type"), date_from.get_attribute("placeholder")) == ("text", "YYYY-MM-DD")
    today = timezone.now().date().isoformat()
    date_from.fill(today)
    apply_filter(page, "Words", "billing")
    assert page.get_by_label("From").input_value() == today
    hits = page.locator("ol.search-hits > li").count()
    assert hits >= 1 and _text(page.locator("[data-result-count]")) == f"{hits} messages found"
    page.get_by_label("Words").fill("no-such-word-anywhere")
    follow(page, page.get_by_role("button", name="Apply"))
    assert _text(page.locator("[data-result-count]")) == "0 messages found"


def test_slash_focuses_the_search_box(page: Any, live_server: LiveServer, world: World) -> None:
    log_in(page, live_server, "/dashboard/w/acme/threads/", viewport=NARROW)
    page.locator("h1").click()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.name") == "q"
    page.keyboard.type("run/1")
    assert page.locator("form[role=search] input[name=q]").input_value() == "run/1"


def test_job_results_read_as_fields(page: Any, live_server: LiveServer, world: World) -> None:
    Job.objects.create(
        workspace=world.workspace,
        kind=Job.Kind.SUMMARIZE,
        status=Job.Status.SUCCEEDED,
        params={"thread_id": "run-1"},
        result={"medallion_id": "m-1", "version": 2, "created": False, "evidence": {"messages": 3}},
    )
    log_in(page, live_server, "/dashboard/w/acme/threads/run-1/", viewport=NARROW)
    fields = page.locator("#jobs [data-job-fields]")
    assert fields.count() == 1
    rows = fields.locator("dt").all_inner_texts()
    assert rows == ["created", "evidence", "medallion_id", "version"]  # alphabetical on both backends
    assert fields.locator("dd").all_inner_texts() == ["no", '{"messages": 3}', "m-1", "2"]
    follow(page, page.locator("#jobs a").first)
    assert page.locator("main [data-job-fields] dt").all_inner_texts() == rows
