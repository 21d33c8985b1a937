"""Findings in the dashboard: the form on the checkpoint and thread pages, the timeline's badges, the search
filter by verdict and the audit export of annotation events."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from checkpoints.models import Annotation, AuditEvent, Workspace
from checkpoints.services.annotations import annotation_create
from checkpoints.services.audit import Actor
from tests.dashboard.test_audit_log_export import body
from tests.dashboard.world import World, make_user
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db


def _checkpoint_annotate_url(world: World) -> str:
    args = [world.workspace.slug, world.thread.thread_id, world.step2.checkpoint_id]
    return reverse("dashboard:checkpoint-annotate", args=args) + "?ns="


def test_it_records_a_finding_on_a_checkpoint_and_shows_it_on_the_page(dash: Client, world: World) -> None:
    response = dash.post(
        _checkpoint_annotate_url(world), {"comment": "Wrong tool picked", "verdict": "wrong"}, follow=True
    )
    page = response.content.decode()
    assert response.redirect_chain[-1][0].endswith(f"/checkpoints/{world.step2.checkpoint_id}/?ns=#findings")
    assert "Finding recorded." in page and "Wrong tool picked" in page and "badge-verdict-wrong" in page
    annotation = Annotation.objects.get()
    assert (annotation.checkpoint_id, annotation.thread_id) == (world.step2.pk, world.thread.pk)
    assert (annotation.actor_type, annotation.actor_label) == ("user", "user:alice")
    event = AuditEvent.objects.filter(action="annotation.create").get()
    assert event.actor_label == "user:alice" and event.actor_type == "user"
    assert event.details["comment"] == "Wrong tool picked" and event.details["verdict"] == "wrong"
    assert event.details["checkpoint_id"] == world.step2.checkpoint_id


def test_it_records_a_finding_on_the_thread_without_a_verdict(dash: Client, world: World) -> None:
    url = reverse("dashboard:thread-annotate", args=[world.workspace.slug, world.thread.thread_id])
    response = dash.post(url, {"comment": "Run looks fine overall", "verdict": ""})
    assert response.status_code == 302 and response["Location"].endswith(
        f"/threads/{world.thread.thread_id}/#findings"
    )
    annotation = Annotation.objects.get()
    assert annotation.checkpoint is None and annotation.verdict == ""
    page = dash.get(reverse("dashboard:thread", args=[world.workspace.slug, world.thread.thread_id]))
    assert "Run looks fine overall" in page.content.decode()


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"comment": "", "verdict": "wrong"}, "This field is required."),
        ({"comment": "a\x00b"}, "Null characters are not allowed."),
        ({"comment": "x" * 5_001}, "Ensure this value has at most 5000 characters"),
        ({"comment": "x", "verdict": "maybe"}, "Select a valid choice"),
    ],
)
def test_it_refuses_bad_input_on_the_form_never_with_a_500(
    dash: Client, world: World, data: dict[str, str], error: str
) -> None:
    response = dash.post(_checkpoint_annotate_url(world), data)
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not Annotation.objects.exists()
    assert not AuditEvent.objects.filter(action="annotation.create").exists()


def test_it_hides_the_form_of_another_workspace(
    client: Client, world: World, other_workspace: Workspace
) -> None:
    client.force_login(make_user("mallory", workspaces=(other_workspace,)))
    assert client.post(_checkpoint_annotate_url(world), {"comment": "x"}).status_code == 404
    assert not Annotation.objects.exists()


def test_it_needs_a_csrf_token(world: World, staff: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    response = client.post(_checkpoint_annotate_url(world), {"comment": "x"})
    assert response.status_code == 403 and b"CSRF" in response.content
    assert not Annotation.objects.exists()


def test_the_timeline_badges_checkpoints_with_their_newest_verdict_and_count(
    dash: Client, workspace: Workspace
) -> None:
    first = make_checkpoint(workspace, "run", checkpoint_id="c-1")
    second = make_checkpoint(workspace, "run", checkpoint_id="c-2")
    make_checkpoint(workspace, "run", checkpoint_id="c-3")
    actor = Actor.system("auditor")
    annotation_create(
        thread=first.thread, actor=actor, comment="hm", verdict="needs_review", checkpoint=first
    )
    annotation_create(thread=first.thread, actor=actor, comment="no", verdict="wrong", checkpoint=first)
    annotation_create(thread=second.thread, actor=actor, comment="just a note", checkpoint=second)
    annotation_create(thread=second.thread, actor=actor, comment="on the thread")
    html = dash.get(reverse("dashboard:thread-timeline", args=[workspace.slug, "run"])).content.decode()
    badges = re.findall(r'id="c-(\d+)".*?(?:data-findings="(\d+)"[^>]*>([^<]+)<|</li>)', html, re.S)
    assert [(int(pk), count, label.strip()) for pk, count, label in badges] == [
        (first.pk, "2", "Wrong · 2"),
        (second.pk, "1", "comment · 1"),
        (second.pk + 1, "", ""),
    ]


def test_search_filters_checkpoints_by_verdict_or_any_finding(dash: Client, workspace: Workspace) -> None:
    wrong = make_checkpoint(workspace, "alpha", agent_id="planner")
    right = make_checkpoint(workspace, "beta", agent_id="coder")
    make_checkpoint(workspace, "gamma", agent_id="tester")
    actor = Actor.system("auditor")
    annotation_create(thread=wrong.thread, actor=actor, comment="bad", verdict="wrong", checkpoint=wrong)
    annotation_create(thread=right.thread, actor=actor, comment="good", verdict="correct", checkpoint=right)
    annotation_create(thread=right.thread, actor=actor, comment="thread-level", verdict="wrong")

    def found(verdict: str) -> list[str]:
        url = reverse("dashboard:search", args=[workspace.slug])
        html = dash.get(url, {"kind": "checkpoints", "verdict": verdict}).content.decode()
        return re.findall(r'<td class="agent">([^<]+)</td>', html)

    assert found("") == ["tester", "coder", "planner"]
    assert found("wrong") == ["planner"]  # the thread-level finding of beta names no checkpoint
    assert found("correct") == ["coder"]
    assert found("needs_review") == []
    assert found("annotated") == ["coder", "planner"]
    refused = dash.get(
        reverse("dashboard:search", args=[workspace.slug]), {"kind": "checkpoints", "verdict": "x"}
    )
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()


def test_the_audit_export_carries_the_comment_and_verdict(dash: Client, world: World) -> None:
    dash.post(_checkpoint_annotate_url(world), {"comment": "=cmd|' /C calc'!A0", "verdict": "needs_review"})
    url = reverse("dashboard:audit-export-json", args=[world.workspace.slug])
    events = json.loads(body(dash.get(url, {"action": "annotation.*"})))["events"]
    assert [e["action"] for e in events] == ["annotation.create"]
    assert events[0]["details"]["comment"] == "=cmd|' /C calc'!A0"
    assert events[0]["details"]["verdict"] == "needs_review"
    assert events[0]["actor_label"] == "user:alice"
    csv_url = reverse("dashboard:audit-export-csv", args=[world.workspace.slug])
    csv_text = body(dash.get(csv_url, {"action": "annotation.*"}))
    assert "needs_review" in csv_text and "annotation.create" in csv_text
