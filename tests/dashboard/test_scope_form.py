""" "Summarise now" on a thread without a medallion scope: disabled on the thread page with the reason and
the fix, a form that sets the scope through thread_update (as the API's PATCH does), then the summary."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.models import AuditEvent, Job, Thread, Workspace
from checkpoints.services.messages import messages_append
from tests.dashboard.world import World, build_world

pytestmark = pytest.mark.django_db


def url(world: World, name: str) -> str:
    return reverse(f"dashboard:{name}", args=[world.workspace.slug, "run-1"])


def test_it_disables_summarise_now_and_offers_to_set_a_scope(dash: Client, world: World) -> None:
    html = dash.get(url(world, "thread")).content.decode()
    assert (
        '<button type="button" class="btn" disabled aria-describedby="summarise-why">Summarise now…</button>'
        in html
    )
    assert "Summarising needs a medallion scope" in html
    assert f'<a href="{url(world, "thread-scope")}?then=summarize">Set a scope and summarise…</a>' in html
    assert "PATCH" not in html.split('id="summarise-why"')[1].split("</p>")[0]  # no "use the API"


def test_it_sets_the_scope_then_continues_to_the_summary(
    dash: Client, world: World, eager_jobs: None, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    to_scope = dash.get(url(world, "thread-summarize"))
    assert to_scope["Location"] == url(world, "thread-scope") + "?then=summarize"
    form = dash.get(to_scope["Location"]).content.decode()
    assert "Set this thread&#x27;s medallion scope" in form and 'name="graph_nodes"' in form
    saved = dash.post(
        to_scope["Location"], {"graph_nodes": " billing , planner, billing", "tags": "refactor"}
    )
    assert (saved.status_code, saved["Location"]) == (302, url(world, "thread-summarize"))
    thread = Thread.objects.get(pk=world.thread.pk)
    assert thread.scope == {"graph_nodes": ["billing", "planner"], "tags": ["refactor"]}
    event = AuditEvent.objects.filter(action="thread.update").latest("id")
    assert (event.actor_label, event.target_id, event.details) == (
        "user:alice",
        "run-1",
        {"fields": ["scope"]},
    )
    confirm = dash.get(saved["Location"])
    assert confirm.status_code == 200 and "Scope of thread run-1 set." in confirm.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        done = dash.post(url(world, "thread-summarize"))
    job = Job.objects.filter(kind=Job.Kind.SUMMARIZE).latest("id")
    assert done.status_code == 302 and job.status == Job.Status.SUCCEEDED, job.error
    page = dash.get(url(world, "thread")).content.decode()
    # Everything is summarised now: the button says so instead of offering a summary of nothing.
    assert "Summarising needs a medallion scope" not in page and "is already in the medallion" in page
    messages_append(
        workspace=world.workspace, thread_id="run-1", messages=[{"role": "user", "content": "more"}]
    )
    page = dash.get(url(world, "thread")).content.decode()
    assert "summarise-why" not in page
    assert f'href="{url(world, "thread-summarize")}">Summarise now…</a>' in page


def test_it_changes_an_existing_scope_and_returns_to_the_thread(dash: Client, world: World) -> None:
    Thread.objects.filter(pk=world.thread.pk).update(scope={"graph_nodes": ["a"], "tags": []})
    form = dash.get(url(world, "thread-scope")).content.decode()
    assert 'name="graph_nodes" value="a"' in form
    saved = dash.post(url(world, "thread-scope"), {"graph_nodes": "", "tags": "t1"})
    assert saved["Location"] == url(world, "thread")
    assert Thread.objects.get(pk=world.thread.pk).scope == {"graph_nodes": [], "tags": ["t1"]}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"graph_nodes": " , ", "tags": ""}, "Give at least one graph node or tag"),
        ({"graph_nodes": "x" * 300, "tags": ""}, "$.graph_nodes[0]"),
        ({"graph_nodes": "a\x00b", "tags": ""}, "Null characters are not allowed."),
    ],
)
def test_it_refuses_a_bad_scope_with_a_400_and_changes_nothing(
    dash: Client, world: World, data: dict[str, str], message: str
) -> None:
    response = dash.post(url(world, "thread-scope"), data)
    assert response.status_code == 400 and message in response.content.decode()
    assert Thread.objects.get(pk=world.thread.pk).scope in ({}, None, {"graph_nodes": [], "tags": []})
    assert not AuditEvent.objects.filter(action="thread.update").exists()


def test_it_hides_another_workspaces_thread_as_not_found(
    client: Client, world: World, other_workspace: Workspace
) -> None:
    from tests.dashboard.world import make_user

    build_world(other_workspace)
    client.force_login(make_user("mallory", workspaces=(other_workspace,)))
    for name in ("thread-scope", "thread-summarize"):
        assert client.get(url(world, name)).status_code == 404
        assert client.post(url(world, name), {"graph_nodes": "x"}).status_code == 404
    assert Thread.objects.get(pk=world.thread.pk).scope in ({}, None, {"graph_nodes": [], "tags": []})


def test_it_disables_summarise_now_when_every_message_is_already_summarised(
    dash: Client, world: World
) -> None:
    Thread.objects.filter(pk=world.thread.pk).update(
        scope={"graph_nodes": ["billing"], "tags": []}, last_summarized_seq=world.thread.last_message_seq
    )
    html = dash.get(url(world, "thread")).content.decode()
    assert (
        '<button type="button" class="btn" disabled aria-describedby="summarise-why">Summarise now…' in html
    )
    assert f"every message up to #{world.thread.last_message_seq} is already in the medallion" in html
    empty = Thread.objects.create(
        workspace=world.workspace, thread_id="quiet", scope={"graph_nodes": ["x"], "tags": []}
    )
    quiet = dash.get(
        reverse("dashboard:thread", args=[world.workspace.slug, empty.thread_id])
    ).content.decode()
    assert "this thread has no message yet" in quiet
