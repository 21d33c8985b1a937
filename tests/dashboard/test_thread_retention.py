"""Keep until / pin / unpin a thread from its page: each previews the change to the idle expiry before it is
confirmed, saves through thread_update (audited `thread.update`), and says what the sweep will do."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from checkpoints.models import AuditEvent, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_set_ttl
from checkpoints.services.retention import threads_expire_idle
from checkpoints.services.threads import thread_create
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ACTOR = Actor.system("test")
# the login, user and workspace, the thread with its idle expiry, the would-be expiry.
KEEP_PREVIEW_QUERIES = 5
# ... and the live checkpoints' counts, the ones beyond keep-latest.
PIN_PAGE_QUERIES = 7


def _text(html: str, marker: str) -> str:
    found = re.search(rf"<[^>]*{marker}[^>]*>(.*?)</(?:p|dd)>", html, re.S)
    assert found is not None, marker
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", found.group(1))).strip()


@pytest.fixture
def weekly(workspace: Workspace) -> Workspace:
    Workspace.objects.filter(pk=workspace.pk).update(thread_idle_ttl_seconds=7 * 86400, keep_latest=2)
    workspace.refresh_from_db()
    with time_machine.travel(T0, tick=False):
        thread_create(workspace=workspace, actor=ACTOR, thread_id="run")
    return workspace


def _url(name: str, workspace: Workspace) -> str:
    return reverse(f"dashboard:{name}", args=[workspace.slug, "run"])


def test_it_previews_keep_until_then_saves_it_and_the_expiry_acts_on_that_date(
    dash: Client, weekly: Workspace, django_assert_num_queries: Callable[..., Any]
) -> None:
    url = _url("thread-keep", weekly)
    with time_machine.travel(T0, tick=False):
        with django_assert_num_queries(KEEP_PREVIEW_QUERIES):
            preview = dash.post(url, {"keep_until": "2026-04-30", "preview": "1"})
        html = preview.content.decode()
        assert preview.status_code == 200
        assert _text(html, "data-change-sentence") == (
            "This thread would be deleted on 2026-05-01 00:00:00 UTC instead of on 2026-03-08 12:00:00 UTC."
        )
        assert "this thread&#x27;s own idle expiry" in _text(html, "data-after")
        assert Thread.objects.get(thread_id="run").ttl_seconds is None  # a preview saves nothing
        saved = dash.post(url, {"keep_until": "2026-04-30"})
    assert saved.status_code == 302
    thread = Thread.objects.get(thread_id="run")
    assert thread.expires_at == datetime(2026, 5, 1, tzinfo=UTC)
    event = AuditEvent.objects.get(action="thread.update")
    assert event.actor_label == "user:alice" and event.details["ttl_seconds"] == thread.ttl_seconds
    page = dash.get(saved["Location"]).content.decode()
    assert "Deleted as idle: 2026-05-01 00:00:00 UTC (this thread&#x27;s own idle expiry)" in page
    with time_machine.travel(datetime(2026, 4, 30, 23, 59, tzinfo=UTC), tick=False):
        assert threads_expire_idle() == 0
    with time_machine.travel(datetime(2026, 5, 1, tzinfo=UTC), tick=False):
        assert threads_expire_idle() == 1


def test_an_empty_date_falls_back_to_the_workspace_rule(dash: Client, weekly: Workspace) -> None:
    with time_machine.travel(T0, tick=False):
        dash.post(_url("thread-keep", weekly), {"keep_until": "2026-12-31"})
        html = dash.post(_url("thread-keep", weekly), {"keep_until": "", "preview": "1"}).content.decode()
    assert _text(html, "data-change-sentence") == (
        "This thread would be deleted on 2026-03-08 12:00:00 UTC instead of on 2027-01-01 00:00:00 UTC."
    )


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("2026-02-28", "Pick today or a later date."),
        ("28/02/2026", "Enter a valid date."),
        ("9999-12-31", "At most 3650 days from now."),
        ("2026-02-30", "Enter a valid date."),
    ],
)
def test_a_bad_date_is_a_400_with_the_reason_and_saves_nothing(
    dash: Client, weekly: Workspace, value: str, error: str
) -> None:
    with time_machine.travel(T0, tick=False):
        response = dash.post(_url("thread-keep", weekly), {"keep_until": value})
    assert response.status_code == 400 and error in response.content.decode()
    assert not AuditEvent.objects.filter(action="thread.update").exists()


def test_the_pin_page_counts_what_it_keeps_and_what_the_sweep_still_takes(
    dash: Client, staff: User, weekly: Workspace, django_assert_num_queries: Callable[..., Any]
) -> None:
    with time_machine.travel(T0, tick=False):
        for n in range(4):
            make_checkpoint(weekly, "run", ttl_seconds=86400 if n == 0 else None)
        with django_assert_num_queries(PIN_PAGE_QUERIES):
            html = dash.get(_url("thread-pin", weekly)).content.decode()
        assert _text(html, "data-change-sentence") == (
            "This thread would never be deleted as idle, instead of on 2026-03-08 12:00:00 UTC."
        )
        assert _text(html, "data-checkpoint-counts").startswith("4 live checkpoints are under this thread.")
        assert "1 has its own expiry date and becomes a tombstone then, 2 are beyond keep-latest" in html
        assert "Pinning the thread does not pin its checkpoints" in html
        assert dash.post(_url("thread-pin", weekly)).status_code == 302
    assert Thread.objects.get(thread_id="run").pinned
    with time_machine.travel(datetime(2027, 1, 1, tzinfo=UTC), tick=False):
        assert threads_expire_idle() == 0
        dash.force_login(staff)  # the login of 2026-03-01 has expired by then
        unpin = dash.get(_url("thread-unpin", weekly)).content.decode()
    assert _text(unpin, "data-change-sentence") == (
        "This thread would be deleted on 2027-01-08 00:00:00 UTC instead of never."
    )
    thread_page = dash.get(reverse("dashboard:thread", args=[weekly.slug, "run"])).content.decode()
    assert 'data-idle-expiry="pinned"' in thread_page and "Unpin thread…" in thread_page


def test_pinning_a_thread_that_holds_a_pinned_checkpoint_changes_nothing(
    dash: Client, weekly: Workspace
) -> None:
    checkpoint = make_checkpoint(weekly, "run")
    checkpoint_set_ttl(checkpoint=checkpoint, actor=ACTOR, pinned=True)
    html = dash.get(_url("thread-pin", weekly)).content.decode()
    assert (
        _text(html, "data-change-sentence") == "No change: this thread would still never be deleted as idle."
    )


@pytest.mark.parametrize("action", ["checkpoint-fork", "checkpoint-ttl", "checkpoint-pin"])
def test_the_fork_and_expiry_pages_have_breadcrumbs_back_to_the_checkpoint(
    dash: Client, weekly: Workspace, action: str
) -> None:
    checkpoint = make_checkpoint(weekly, "run", checkpoint_id="step-1")
    html = dash.get(
        reverse(f"dashboard:{action}", args=[weekly.slug, "run", "step-1"]) + "?ns="
    ).content.decode()
    crumbs = re.search(r'<nav class="crumbs" aria-label="Breadcrumb">(.*?)</nav>', html, re.S)
    assert crumbs is not None
    links = re.findall(r'<a href="([^"]+)">(.*?)</a>', crumbs.group(1))
    assert [(href, re.sub(r"<[^>]+>", "", text)) for href, text in links] == [
        (f"/dashboard/w/{weekly.slug}/threads/", "Threads"),
        (f"/dashboard/w/{weekly.slug}/threads/run/", "run"),
        (
            f"/dashboard/w/{weekly.slug}/threads/run/checkpoints/{checkpoint.checkpoint_id}/?ns=",
            "Checkpoint step-1",
        ),
    ]
