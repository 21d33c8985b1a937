"""Headless Chromium, dashboard only: edit and preview a retention policy before saving it, fork with an
edited state and a choice of messages, open a job, and read a sweep's checkpoints in the audit log.
Screenshots (CAIRN_SCREENSHOTS=1) are taken 1280 px wide."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer

from checkpoints.models import AuditEvent, Checkpoint, Job, Message, Thread, Workspace
from checkpoints.services.retention import retention_sweep
from tests.browser.helpers import SCREENSHOT_WIDTH, follow, log_in, open_section, submit
from tests.dashboard.world import World
from tests.factories import make_checkpoint

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_edits_previews_and_saves_the_retention_policy(
    page: Any, live_server: LiveServer, world: World, screenshot: Any
) -> None:
    log_in(page, live_server, "/dashboard/w/acme/retention/", viewport=SCREENSHOT_WIDTH)
    follow(page, page.get_by_role("link", name="Edit policy…").first)
    page.get_by_label("Keep latest").fill("1")
    page.get_by_label("Idle thread expiry:", exact=True).fill("45")
    page.get_by_label("Idle thread expiry: unit").select_option("days")
    follow(page, page.get_by_role("button", name="Preview this policy"))
    preview = page.locator("[data-policy-preview]")
    assert preview.is_visible()
    counts = preview.locator("[data-rule-count]").all_inner_texts()
    assert counts[1] == "6"  # keep-latest 1 would tombstone six checkpoints; nothing is saved yet
    assert Workspace.objects.get(slug="acme").keep_latest is None
    screenshot(page, "retention-edit-preview")

    page.get_by_label("Default checkpoint TTL:", exact=True).fill("3651")  # the API's bound: 10 years
    follow(page, page.get_by_role("button", name="Save policy"))
    assert "At most 3650 days" in page.locator('[data-error-for="default_ttl_seconds"]').inner_text()
    assert Workspace.objects.get(slug="acme").keep_latest is None
    page.get_by_label("Default checkpoint TTL:", exact=True).fill("")
    page.get_by_label("Keep latest").fill("2")
    submit(page, "Save policy", lands_on="/dashboard/w/acme/retention/", flash="Retention policy saved.")
    assert "45 days" in page.locator(".facts").inner_text()
    workspace = Workspace.objects.get(slug="acme")
    assert (workspace.keep_latest, workspace.thread_idle_ttl_seconds) == (2, 45 * 86_400)
    event = AuditEvent.objects.get(action="retention.policy")
    assert event.details["before"]["keep_latest"] is None and event.details["after"]["keep_latest"] == 2


def test_it_forks_with_an_edited_state_and_chosen_messages(
    page: Any, live_server: LiveServer, world: World, screenshot: Any
) -> None:
    log_in(
        page,
        live_server,
        f"/dashboard/w/acme/threads/run-1/checkpoints/{world.step2.checkpoint_id}/?ns=",
        viewport=SCREENSHOT_WIDTH,
    )
    follow(page, page.get_by_role("link", name="Fork from here…"))
    page.get_by_label("New thread id").fill("edited-fork")
    state = page.get_by_label("State of the new thread's head (JSON)")
    assert json.loads(state.input_value())["score"] == 0.93
    state.fill('{"goal": "refactor billing", "todo": [')  # broken JSON: refused inline, nothing forked
    follow(page, page.get_by_role("button", name="Fork"))
    assert "Malformed JSON" in page.locator('[data-error-for="state"]').inner_text()
    assert not Thread.objects.filter(thread_id="edited-fork").exists()

    page.get_by_label("New thread id").fill("edited-fork")
    page.get_by_label("State of the new thread's head (JSON)").fill(
        json.dumps({"goal": "refactor billing", "todo": ["ship it"], "done": ["split", "test"]}, indent=2)
    )
    page.get_by_label("Only the ones ticked below").check()
    page.get_by_label(re.compile(r"#2 assistant")).uncheck()
    screenshot(page, "fork-with-changes")
    submit(page, "Fork", lands_on="/threads/edited-fork/", flash="state edited; 2 messages carried")
    facts = page.locator(".facts").inner_text()
    assert "forked from" in facts.lower() and "run-1" in facts and world.step2.checkpoint_id in facts
    fork = Thread.objects.get(thread_id="edited-fork")
    assert list(Message.objects.filter(thread=fork).values_list("seq", flat=True).order_by("seq")) == [1, 3]
    head = Checkpoint.objects.get(thread=fork)
    assert json.loads(head.state or "")["todo"] == ["ship it"]


def test_it_opens_a_job_and_the_checkpoints_a_sweep_touched(
    page: Any, live_server: LiveServer, world: World, screenshot: Any
) -> None:
    due = make_checkpoint(world.workspace, "scratch", state={"tmp": True}, ttl_seconds=60)
    Checkpoint.objects.filter(pk=due.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    retention_sweep(workspace=world.workspace)
    log_in(page, live_server, "/dashboard/w/acme/jobs/", viewport=SCREENSHOT_WIDTH)
    schedule = page.locator("table.schedule")
    assert "1 min" in schedule.locator("tr", has_text="retention-sweep").inner_text()
    assert "1 h" in schedule.locator("tr", has_text="tombstone-purge").inner_text()
    screenshot(page, "jobs")
    job = Job.objects.get(workspace=world.workspace)
    follow(page, page.locator(f'a[href$="/jobs/{job.job_id}/"]'))
    assert page.locator("[data-job-status]").inner_text() == "failed"
    assert "LLMError: the model returned invalid JSON" in page.locator("[data-job-error]").inner_text()
    assert page.locator("[data-job-attempts]").inner_text() == "0"
    screenshot(page, "job-detail")

    open_section(page, "Audit log")
    page.get_by_label("Action").select_option("retention.*")
    follow(page, page.get_by_role("button", name="Apply"))
    row = page.locator("table.events tbody tr").first
    assert "retention.sweep" in row.inner_text()
    swept = row.locator("a[data-swept]")
    assert not swept.is_visible()  # inside the closed details
    row.locator("summary").click()
    assert swept.inner_text() == due.checkpoint_id
    screenshot(page, "audit-log-details")
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Export CSV").click()
    with open(download_info.value.path(), encoding="utf-8") as saved:
        lines = saved.read().splitlines()
    assert lines[0].startswith("created_at,") and len(lines) == 2 and "retention.sweep" in lines[1]
    follow(page, swept)
    assert page.url.endswith(f"/threads/scratch/checkpoints/{due.checkpoint_id}/?ns=")
