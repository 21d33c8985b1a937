"""An auditor records a finding in headless Chromium: on a checkpoint's page, then sees its badge on the
thread's timeline and finds the checkpoint again by searching for its verdict."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_django.live_server_helper import LiveServer

from checkpoints.models import Annotation, AuditEvent
from tests.browser.helpers import follow, log_in, open_section
from tests.dashboard.world import World

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_records_a_finding_and_finds_it_on_the_timeline_and_in_search(
    page: Any, live_server: LiveServer, world: World
) -> None:
    checkpoint = world.step2
    path = f"/dashboard/w/acme/threads/{world.thread.thread_id}/checkpoints/{checkpoint.checkpoint_id}/?ns="
    log_in(page, live_server, path)
    findings = page.locator("#findings")
    assert "No findings yet." in findings.inner_text()
    findings.get_by_label("Comment").fill("Refund approved above the limit")
    findings.get_by_label("Verdict").select_option("wrong")
    follow(page, findings.get_by_role("button", name="Add finding"))
    assert "Finding recorded." in page.locator("ul.flash").inner_text()
    assert "Refund approved above the limit" in page.locator("#findings [data-annotation]").inner_text()
    annotation = Annotation.objects.get()
    assert (annotation.checkpoint_id, annotation.verdict, annotation.actor_label) == (
        checkpoint.pk,
        "wrong",
        "user:alice",
    )
    assert AuditEvent.objects.filter(action="annotation.create", actor_label="user:alice").count() == 1

    # The timeline: the checkpoint carries the badge, the others none.
    page.goto(f"{live_server.url}/dashboard/w/acme/threads/{world.thread.thread_id}/timeline/")
    badge = page.locator(f"#c-{checkpoint.pk} [data-findings]")
    assert badge.inner_text() == "Wrong · 1"
    assert page.locator("[data-findings]").count() == 1

    # Search: checkpoints with a "wrong" finding.
    open_section(page, "Search")
    page.get_by_label("Search in").select_option("checkpoints")
    page.get_by_label("Finding").select_option("wrong")
    follow(page, page.get_by_role("button", name="Apply"))
    assert page.locator("[data-result-count]").get_attribute("data-result-count") == "1"
    assert checkpoint.agent_id in page.locator("td.agent").all_inner_texts()
