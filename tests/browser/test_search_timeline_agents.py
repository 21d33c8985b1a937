"""Three auditor tasks done through the dashboard alone, in headless Chromium: search a word across threads
and open a hit in its thread's timeline; find a handoff by agent; step from a checkpoint to the next one (and
back to the first, where "Previous step" is disabled with the reason).
With CAIRN_SCREENSHOTS=1 they write docs/screenshots/search.png, timeline.png and handoffs.png (1280 px)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pytest_django.live_server_helper import LiveServer

from checkpoints.services.messages import messages_append
from tests.browser.helpers import apply_filter, follow, log_in, open_filtered_list
from tests.dashboard.world import World

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(world: World) -> World:
    """The browser tests' world, with a second thread's messages to search."""
    messages_append(
        workspace=world.workspace,
        thread_id="run-2",
        messages=[
            {"role": "user", "content": "Why did the billing export fail last night?"},
            {"role": "assistant", "name": "support-bot", "content": "The billing export timed out at 02:00."},
        ],
    )
    return world


def test_it_finds_a_word_across_threads_and_opens_its_place_in_the_timeline(
    page: Any, live_server: LiveServer, world: World, screenshot: Any
) -> None:
    open_filtered_list(page, live_server, "Search", "Words", "billing")
    hits = page.locator("ol.search-hits > li")
    assert hits.count() == 4  # two in run-2, one in run-1 and its copy in the fork run-1-fork
    assert page.locator("ol.search-hits mark").first.inner_text().lower() == "billing"
    threads = [hits.nth(i).locator(".msg-head a").first.inner_text() for i in range(4)]
    assert sorted(threads) == ["run-1", "run-1-fork", "run-2", "run-2"]
    screenshot(page, "search")

    follow(page, hits.nth(threads.index("run-1")).get_by_role("link", name="#1"))
    assert page.locator("h1").inner_text() == "Timeline of run-1"
    anchored = page.locator(".tl-anchor")
    assert anchored.get_attribute("id") == "m-1" and "billing service" in anchored.inner_text()
    assert anchored.locator("[data-followed-by]").inner_text() == world.root.checkpoint_id
    assert page.locator("[data-spawned-by]").count() == 2  # the tools subgraph under its step
    screenshot(page, "timeline")


def test_it_finds_a_handoff_by_agent(
    page: Any, live_server: LiveServer, world: World, screenshot: Any
) -> None:
    open_filtered_list(page, live_server, "Handoffs", "To agent", "reviewer")
    rows = page.locator("table.handoffs tbody tr")
    assert rows.count() == 1
    assert re.sub(r"\s+", " ", rows.first.locator("td").first.inner_text()) == "planner → reviewer"
    assert rows.first.locator("[data-status]").inner_text() == "taken"
    screenshot(page, "handoffs")
    apply_filter(page, "To agent", "nobody")
    assert page.locator("table.handoffs").inner_text().count("No handoffs match.") == 1


def test_it_steps_from_a_checkpoint_to_the_next(page: Any, live_server: LiveServer, world: World) -> None:
    log_in(page, live_server, f"/dashboard/w/acme/threads/run-1/checkpoints/{world.step1.checkpoint_id}/?ns=")
    assert page.locator("h1").inner_text() == f"Checkpoint {world.step1.checkpoint_id}"
    steps = page.get_by_role("navigation", name="Steps")
    follow(page, steps.get_by_role("link", name=re.compile("Next step")))
    assert page.locator("h1").inner_text() == f"Checkpoint {world.step2.checkpoint_id}"
    follow(page, steps.get_by_role("link", name=re.compile("Previous step")))
    assert page.locator("h1").inner_text() == f"Checkpoint {world.step1.checkpoint_id}"
    follow(page, page.get_by_role("link", name="See it in the timeline"))
    assert page.locator(".tl-anchor").get_attribute("id") == f"c-{world.step1.pk}"
    page.go_back()
    follow(page, steps.get_by_role("link", name=re.compile("Previous step")))
    assert page.locator("h1").inner_text() == f"Checkpoint {world.root.checkpoint_id}"
    # At the first step, "Previous step" is a disabled button that says why.
    first = steps.get_by_role("button", name="← Previous step")
    assert first.is_disabled()
    assert first.get_attribute("aria-describedby") == "previous-why"
    assert steps.locator("#previous-why").inner_text() == "This is the first step."
