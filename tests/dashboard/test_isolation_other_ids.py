"""Tenant isolation, the other direction: a member of workspace A opens A's own pages with workspace B's ids
in the query string (or B's thread id in the path). Each answers 404 or an empty result, and no body ever
holds B's data. (tests/security/test_isolation_routes.py tries every route with the other workspace's ids in
the path.)"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from checkpoints.models import Checkpoint, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_handoff
from tests.dashboard.world import World, build_world
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

MARKER = "SECRET-OF-GLOBEX-41d9"


@pytest.fixture
def other(other_workspace: Workspace) -> Checkpoint:
    """Workspace B ("globex"): the same world (same thread ids, other checkpoints), plus a thread only B has,
    named MARKER, whose checkpoint carries MARKER and was handed from B's own agent "globex-agent" to
    "reviewer" (an agent A has too). The ids themselves are echoed by the filter forms and error pages (the
    request's own text), so the bodies are checked for MARKER and B's checkpoint ids instead."""
    build_world(other_workspace)
    secret = make_checkpoint(
        other_workspace,
        "globex-only",
        agent_id="globex-agent",
        step_name=MARKER,
        state={"secret": MARKER},
        metadata={"marker": MARKER},
    )
    Thread.objects.filter(workspace=other_workspace, thread_id="globex-only").update(
        name=MARKER, scope={"graph_nodes": [MARKER], "tags": []}
    )
    return checkpoint_handoff(source=secret, target_agent_id="reviewer", actor=Actor.system(MARKER))


def get(dash: Client, path: str, **params: str) -> tuple[int, str]:
    response = dash.get(path, params)
    return response.status_code, response.content.decode()


def others_step(workspace: Workspace, step_name: str) -> Checkpoint:
    """B's first checkpoint of `step_name` in its run-1: a thread id A has too."""
    found = Checkpoint.objects.filter(workspace=workspace, thread__thread_id="run-1", step_name=step_name)
    checkpoint = found.order_by("id").first()
    assert checkpoint is not None
    return checkpoint


def others_ids(workspace: Workspace) -> list[str]:
    return list(Checkpoint.objects.filter(workspace=workspace).values_list("checkpoint_id", flat=True))


def test_the_timeline_does_not_open_at_another_workspaces_checkpoint(
    dash: Client, world: World, other: Checkpoint
) -> None:
    timeline = reverse("dashboard:thread-timeline", args=[world.workspace.slug, "run-1"])
    same_thread = others_step(other.workspace, "split")
    for checkpoint in (other, same_thread):
        status, body = get(dash, timeline, checkpoint=checkpoint.checkpoint_id, ns="")
        assert status == 404 and MARKER not in body
        assert f"c-{checkpoint.pk}" not in body and "tl-anchor" not in body
    elsewhere = reverse("dashboard:thread-timeline", args=[world.workspace.slug, "globex-only"])
    status, body = get(dash, elsewhere, checkpoint=other.checkpoint_id)
    assert status == 404 and MARKER not in body


def test_the_handoffs_filtered_by_another_workspaces_agent_are_empty(
    dash: Client, world: World, other: Checkpoint
) -> None:
    handoffs = reverse("dashboard:handoffs", args=[world.workspace.slug])
    for name in ("agent", "from_agent"):
        status, body = get(dash, handoffs, **{name: "globex-agent"})
        assert status == 200 and "No handoffs match." in body and MARKER not in body
    # "reviewer" receives handoffs in both workspaces: only A's is listed.
    status, body = get(dash, handoffs, to_agent="reviewer")
    listed = set(re.findall(r"/checkpoints/([^/]+)/", body))
    assert status == 200 and world.handoff.checkpoint_id in listed
    assert listed.isdisjoint(others_ids(other.workspace)) and MARKER not in body
    status, body = get(dash, handoffs, thread="globex-only")
    assert "No handoffs match." in body and MARKER not in body


def test_the_retention_preview_counts_only_this_workspaces_checkpoints(
    dash: Client, world: World, other: Checkpoint
) -> None:
    # B has checkpoints past their expiry and an idle thread, which A's preview must not count.
    for n in range(7):
        due = make_checkpoint(other.workspace, "globex-due", state={"n": n}, ttl_seconds=60)
        Checkpoint.objects.filter(pk=due.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    Thread.objects.filter(workspace=other.workspace).update(updated_at=timezone.now() - timedelta(days=9))
    url = reverse("dashboard:retention-edit", args=[world.workspace.slug])
    form = {
        "default_ttl_seconds_0": "",
        "default_ttl_seconds_1": "days",
        "keep_latest": "1",
        "thread_idle_ttl_seconds_0": "2",
        "thread_idle_ttl_seconds_1": "days",
        "tombstone_retention_seconds_0": "",
        "tombstone_retention_seconds_1": "days",
        "auto_summarize_every": "",
        "preview": "1",
    }
    response = dash.post(url, form)
    body = response.content.decode()
    assert response.status_code == 200 and "data-policy-preview" in body
    expired, pruned, purged, idle, store_items = (int(n) for n in re.findall(r"data-rule-count>(\d+)<", body))
    # A alone: nothing past its expiry, run-1 keeps 1 of 6 live in "" and 1 of 2 in "tools", no idle thread.
    assert (expired, pruned, purged, idle, store_items) == (0, 6, 0, 0, 0)
    assert "globex" not in body and MARKER not in body
    assert set(re.findall(r"/checkpoints/([^/]+)/", body)).isdisjoint(others_ids(other.workspace))


def test_the_scope_form_of_another_workspaces_thread_is_not_found(
    dash: Client, world: World, other: Checkpoint
) -> None:
    url = reverse("dashboard:thread-scope", args=[world.workspace.slug, "globex-only"])
    status, body = get(dash, url)
    assert status == 404 and MARKER not in body and 'name="graph_nodes"' not in body
    posted = dash.post(url, {"graph_nodes": "taken", "tags": ""})
    assert posted.status_code == 404 and MARKER not in posted.content.decode()
    thread = Thread.objects.get(workspace=other.workspace, thread_id="globex-only")
    assert thread.scope == {"graph_nodes": [MARKER], "tags": []}
    assert not Thread.objects.filter(workspace=world.workspace, thread_id="globex-only").exists()


def test_the_diff_against_another_workspaces_thread_is_not_found(
    dash: Client, world: World, other: Checkpoint
) -> None:
    diff = reverse(
        "dashboard:checkpoint-diff", args=[world.workspace.slug, "run-1", world.step2.checkpoint_id]
    )
    same_thread = others_step(other.workspace, "test")
    attempts = [
        {"against": other.checkpoint_id, "against_thread": "globex-only", "against_ns": ""},
        {"against": same_thread.checkpoint_id, "against_thread": "run-1", "against_ns": ""},
        {"against": same_thread.checkpoint_id},
    ]
    for params in attempts:
        for extra in ({}, {"format": "json"}):
            status, body = get(dash, diff, ns="", **params, **extra)
            assert status == 404, params
            assert MARKER not in body and "refactor billing" not in body and "diff-path" not in body
