"""The audit log tells who looked (a checkpoint's state, a diff, an export: one event per view, with the
actor), and writers show by their API key's name on the timeline, the checkpoint page, search and the log."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.models import AuditEvent, Workspace
from checkpoints.services.audit import Actor, audit_record
from checkpoints.services.workspaces import api_key_create
from tests.dashboard.refund_run import build_refund_run
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db


def _checkpoint_url(workspace: Workspace, name: str, thread_id: str, checkpoint_id: str) -> str:
    return reverse(f"dashboard:{name}", args=[workspace.slug, thread_id, checkpoint_id]) + "?ns="


def test_it_records_each_view_of_a_state_a_diff_and_a_download(dash: Client, workspace: Workspace) -> None:
    run = build_refund_run(workspace)
    before = AuditEvent.objects.count()
    dash.get(_checkpoint_url(workspace, "checkpoint", "refund-run", run.answered.checkpoint_id))
    dash.get(_checkpoint_url(workspace, "checkpoint-diff", "refund-run", run.answered.checkpoint_id))
    dash.get(
        _checkpoint_url(workspace, "checkpoint-raw", "refund-run", run.asked.checkpoint_id) + "&part=state"
    )
    events = list(AuditEvent.objects.order_by("id")[before:])
    assert [(e.action, e.actor_label, e.details.get("part")) for e in events] == [
        ("checkpoint.view", "user:alice", "page"),
        ("checkpoint.view_diff", "user:alice", None),
        ("checkpoint.view", "user:alice", "state"),
    ]
    assert events[1].target_id == f"refund-run//{run.answered.checkpoint_id}"
    assert events[1].details["against"] == f"refund-run//{run.asked.checkpoint_id}"
    page = dash.get(reverse("dashboard:audit", args=[workspace.slug]), {"action": "checkpoint.*"})
    assert re.findall(r'<code class="action">([^<]+)</code>', page.content.decode()) == [
        "checkpoint.view",
        "checkpoint.view_diff",
        "checkpoint.view",
    ]


def test_it_records_no_view_of_a_state_it_did_not_show(dash: Client, workspace: Workspace) -> None:
    response = dash.get(_checkpoint_url(workspace, "checkpoint-diff", "missing", "nope"))
    assert response.status_code == 404
    assert not AuditEvent.objects.filter(action__startswith="checkpoint.view").exists()


def test_it_shows_writers_and_actors_by_their_key_name(dash: Client, workspace: Workspace) -> None:
    key, _secret = api_key_create(workspace=workspace, name="refund-bot", scope="write")
    writer = f"key:{key.prefix}"
    checkpoint = make_checkpoint(workspace, "paid", written_by=writer)
    detail = dash.get(_checkpoint_url(workspace, "checkpoint", "paid", checkpoint.checkpoint_id)).content
    assert re.search(rb"<strong data-writer-name>refund-bot</strong> <code>key:", detail)
    timeline = dash.get(reverse("dashboard:thread-timeline", args=[workspace.slug, "paid"])).content
    assert b"by refund-bot</span>" in timeline
    search = dash.get(reverse("dashboard:search", args=[workspace.slug]), {"kind": "checkpoints"}).content
    assert b"<strong data-writer-name>refund-bot</strong>" in search
    audit_record(workspace=workspace, actor=Actor.for_api_key(key), action="thread.update")
    log = dash.get(reverse("dashboard:audit", args=[workspace.slug])).content.decode()
    assert "<strong data-actor-key-name>refund-bot</strong>" in log
    assert f"key:{key.prefix} (refund-bot)" not in log
