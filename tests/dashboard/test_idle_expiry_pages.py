"""The thread page shows the date the idle-thread expiry acts on and the rule that sets it; the pin page
says what pinning keeps (docs/retention.md)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
import time_machine
from django.test import Client
from django.urls import reverse

from checkpoints.models import Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_set_ttl
from checkpoints.services.retention import threads_expire_idle
from checkpoints.services.threads import thread_create
from tests.dashboard.world import make_user
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ACTOR = Actor.system("test")


def idle_expiry(dash: Client, workspace: Workspace, thread_id: str) -> tuple[str, str]:
    """The thread page's idle expiry: its rule (data attribute) and its text, tags stripped."""
    page = dash.get(reverse("dashboard:thread", args=[workspace.slug, thread_id])).content.decode()
    found = re.search(r'<dt>Idle expiry</dt><dd data-idle-expiry="([^"]*)">(.*?)</dd>', page, re.S)
    assert found is not None
    return found.group(1), re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(2))).strip()


@pytest.fixture
def weekly(workspace: Workspace) -> Workspace:
    Workspace.objects.filter(pk=workspace.pk).update(thread_idle_ttl_seconds=7 * 86400)
    workspace.refresh_from_db()
    return workspace


def test_the_thread_page_shows_each_rule_and_the_date_the_expiry_acts_on(
    dash: Client, weekly: Workspace
) -> None:
    with time_machine.travel(T0, tick=False):
        thread_create(workspace=weekly, actor=ACTOR, thread_id="audited", ttl_seconds=90 * 86400)
        thread_create(workspace=weekly, actor=ACTOR, thread_id="short", ttl_seconds=3600)
        thread_create(workspace=weekly, actor=ACTOR, thread_id="plain")
        thread_create(workspace=weekly, actor=ACTOR, thread_id="pinned", pinned=True, ttl_seconds=60)
        kept = make_checkpoint(weekly, "holds-pin")
        checkpoint_set_ttl(checkpoint=kept, actor=ACTOR, pinned=True)

    assert idle_expiry(dash, weekly, "audited") == (
        "thread",
        "2026-05-30 12:00:00 UTC this thread's own idle expiry, 90 days after its last write "
        "(it replaces the workspace's rule)",
    )
    assert idle_expiry(dash, weekly, "short") == (
        "thread",
        "2026-03-01 13:00:00 UTC this thread's own idle expiry, 1 h after its last write "
        "(it replaces the workspace's rule)",
    )
    assert idle_expiry(dash, weekly, "plain") == (
        "workspace",
        "2026-03-08 12:00:00 UTC the workspace's idle-thread rule , 7 days after the last write",
    )
    assert idle_expiry(dash, weekly, "pinned") == (
        "pinned",
        "never pinned this thread is pinned: never deleted as idle",
    )
    assert idle_expiry(dash, weekly, "holds-pin") == (
        "pinned",
        "never pinned it holds a pinned checkpoint: never deleted as idle",
    )

    # What the page says is what the expiry does: on 2026-03-08 12:00 "short" and "plain" are gone.
    with time_machine.travel(datetime(2026, 3, 8, 12, 0, tzinfo=UTC), tick=False):
        assert threads_expire_idle() == 2
    gone = dash.get(reverse("dashboard:thread", args=[weekly.slug, "plain"]))
    assert gone.status_code == 404


def test_without_any_idle_rule_the_thread_page_says_never(dash: Client, workspace: Workspace) -> None:
    thread_create(workspace=workspace, actor=ACTOR, thread_id="forever")
    assert idle_expiry(dash, workspace, "forever") == (
        "none",
        "never neither this thread nor the workspace has an idle expiry",
    )


def test_the_pin_pages_say_the_thread_is_kept_while_it_holds_the_pin(dash: Client, weekly: Workspace) -> None:
    checkpoint = make_checkpoint(weekly, "t1")
    args = [weekly.slug, "t1", checkpoint.checkpoint_id]
    pin = dash.get(reverse("dashboard:checkpoint-pin", args=args) + "?ns=").content.decode()
    assert "its thread is not deleted as idle while it holds it" in pin
    unpin = dash.get(reverse("dashboard:checkpoint-unpin", args=args) + "?ns=").content.decode()
    assert "its thread can be deleted as idle again" in unpin


def test_the_retention_page_says_which_threads_the_idle_rule_spares(dash: Client, weekly: Workspace) -> None:
    page = dash.get(reverse("dashboard:retention", args=[weekly.slug])).content.decode()
    assert "7 days after a thread's last write" in page
    assert "a thread with its own idle expiry keeps its own" in page
    assert "one holding a pinned checkpoint, is never deleted" in page


def test_the_admin_thread_page_shows_the_same_date_and_rule(client: Client, weekly: Workspace) -> None:
    client.force_login(make_user("root", superuser=True))
    with time_machine.travel(T0, tick=False):
        audited = thread_create(workspace=weekly, actor=ACTOR, thread_id="audited", ttl_seconds=90 * 86400)
        plain = thread_create(workspace=weekly, actor=ACTOR, thread_id="plain")
        pinned = thread_create(workspace=weekly, actor=ACTOR, thread_id="pinned", pinned=True)
    shown = {
        thread.thread_id: client.get(
            reverse("admin:checkpoints_thread_change", args=[thread.pk])
        ).content.decode()
        for thread in (audited, plain, pinned)
    }
    assert "2026-05-30 12:00:00 UTC, by its own idle expiry" in shown["audited"]
    assert "2026-03-08 12:00:00 UTC, by the workspace&#x27;s idle-thread rule" in shown["plain"]
    assert "never (pinned)" in shown["pinned"]
