"""Who may open what: generated from the dashboard's URL patterns, so a new page or action is covered the
moment it is routed. Anonymous → login; logged in but not staff → 403; staff of another workspace → 404
(exactly like a workspace that does not exist); a member → 200."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, reverse

from checkpoints.dashboard import urls as dashboard_urls
from checkpoints.dashboard.views.actions.base import ConfirmAction
from checkpoints.models import ApiKey, AuditEvent, Checkpoint, Job, Thread, Workspace
from checkpoints.services.workspaces import api_key_create
from tests.dashboard.world import World, make_user

pytestmark = pytest.mark.django_db

WORKSPACE_PATTERNS: list[URLPattern] = dashboard_urls.workspace_patterns


def is_action(pattern: URLPattern) -> bool:
    view_class = getattr(pattern.callback, "view_class", None)
    return isinstance(view_class, type) and issubclass(view_class, ConfirmAction)


def url_kwargs(world: World, key: ApiKey) -> dict[str, Any]:
    """A value for every URL argument any dashboard route takes (a new argument must be added here)."""
    return {
        "slug": world.workspace.slug,
        "thread_id": world.thread.thread_id,
        "checkpoint_id": world.step2.checkpoint_id,
        "medallion_id": world.medallion.medallion_id,
        "prefix": key.prefix,
        "agent_id": world.step2.agent_id or "planner",
        "job_id": Job.objects.filter(workspace=world.workspace).values_list("job_id", flat=True).first(),
    }


def urls_for(world: World, key: ApiKey) -> list[tuple[str, str, bool]]:
    """(name, url, is_action) for every workspace route, filled in for `world`."""
    values = url_kwargs(world, key)
    result = []
    for pattern in WORKSPACE_PATTERNS:
        names = [*pattern.pattern.converters, "slug"]
        missing = [name for name in names if name not in values]
        assert not missing, f"{pattern.name}: add a value for {missing} to url_kwargs()"
        kwargs = {name: values[name] for name in names}
        assert pattern.name is not None, pattern
        result.append((pattern.name, reverse(f"dashboard:{pattern.name}", kwargs=kwargs), is_action(pattern)))
    return result


@pytest.fixture
def key(world: World) -> ApiKey:
    return api_key_create(workspace=world.workspace, name="ci")[0]


def snapshot() -> tuple[int, int, int, int]:
    """Counts that any action would change."""
    return (
        AuditEvent.objects.count(),
        Thread.objects.count(),
        Checkpoint.objects.filter(expired_at__isnull=True, pinned=False).count(),
        ApiKey.objects.filter(revoked_at__isnull=True).count(),
    )


def test_it_routes_every_kind_of_page_and_action(world: World, key: ApiKey) -> None:
    names = {name for name, _, _ in urls_for(world, key)}
    assert {
        "overview",
        "threads",
        "thread",
        "checkpoint",
        "checkpoint-diff",
        "medallions",
        "audit",
        "retention",
        "keys",
    } <= names
    actions = {name for name, _, action in urls_for(world, key) if action}
    assert {
        "checkpoint-fork",
        "checkpoint-expire",
        "checkpoint-pin",
        "checkpoint-ttl",
        "thread-delete",
        "thread-prune",
        "retention-sweep",
        "key-create",
        "key-revoke",
    } <= actions


def test_it_sends_anonymous_visitors_to_the_login_page(client: Client, world: World, key: ApiKey) -> None:
    for name, url, action in [("home", reverse("dashboard:home"), False), *urls_for(world, key)]:
        for method in ("get", "post") if action else ("get",):
            response = getattr(client, method)(url)
            assert response.status_code == 302, (name, method)
            assert response["Location"].startswith("/dashboard/login/?next="), name


def test_it_refuses_logged_in_users_who_are_not_staff(client: Client, world: World, key: ApiKey) -> None:
    # A member of the workspace, but not staff: the dashboard is for staff accounts only.
    client.force_login(make_user("bob", staff=False, workspaces=(world.workspace,)))
    before = snapshot()
    for name, url, action in [("home", reverse("dashboard:home"), False), *urls_for(world, key)]:
        assert client.get(url).status_code == 403, name
        if action:
            assert client.post(url).status_code == 403, name
    assert snapshot() == before


def test_it_hides_other_workspaces_as_not_found(
    client: Client, world: World, key: ApiKey, other_workspace: Workspace
) -> None:
    client.force_login(make_user("mallory", workspaces=(other_workspace,)))
    before = snapshot()
    for name, url, action in urls_for(world, key):
        response = client.get(url)
        assert response.status_code == 404, name
        assert world.thread.thread_id not in response.content.decode()
        if action:
            assert client.post(url, {"strategy": "delete", "name": "x", "scope": "admin"}).status_code == 404
    assert snapshot() == before
    # Their own workspace (the only one: home opens it directly) does not mention the other one either.
    home = client.get(reverse("dashboard:home"), follow=True).content.decode()
    assert other_workspace.slug in home and world.workspace.slug not in home


def test_it_answers_404_for_a_workspace_that_does_not_exist(dash: Client, world: World, key: ApiKey) -> None:
    for name, url, _ in urls_for(world, key):
        missing = url.replace(f"/w/{world.workspace.slug}/", "/w/no-such-workspace/")
        assert dash.get(missing).status_code == 404, name


def test_it_opens_every_page_and_confirmation_for_a_member(dash: Client, world: World, key: ApiKey) -> None:
    Thread.objects.filter(pk=world.thread.pk).update(scope={"graph_nodes": ["planner"], "tags": []})
    for name, url, _ in urls_for(world, key):
        response = dash.get(url)
        assert response.status_code == 200, (name, response.content[:500])


def test_it_lets_superusers_see_every_workspace(
    client: Client, world: World, key: ApiKey, other_workspace: Workspace
) -> None:
    client.force_login(make_user("root", superuser=True))
    home = client.get(reverse("dashboard:home")).content.decode()
    assert world.workspace.slug in home and other_workspace.slug in home
    Thread.objects.filter(pk=world.thread.pk).update(scope={"graph_nodes": ["planner"], "tags": []})
    for name, url, _ in urls_for(world, key):
        assert client.get(url).status_code == 200, name


def test_it_lets_only_staff_log_in(client: Client, world: World) -> None:
    make_user("bob", staff=False, workspaces=(world.workspace,))
    refused = client.post(
        reverse("dashboard:login"), {"username": "bob", "password": "correct horse battery staple"}
    )
    assert refused.status_code == 200
    assert "staff account" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    make_user("carol", workspaces=(world.workspace,))
    accepted = client.post(
        reverse("dashboard:login"), {"username": "carol", "password": "correct horse battery staple"}
    )
    assert accepted.status_code == 302 and accepted["Location"] == reverse("dashboard:home")


def test_it_redirects_the_site_root_to_the_dashboard(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == reverse("dashboard:home")


def test_it_logs_out_with_a_post(dash: Client) -> None:
    assert dash.post(reverse("dashboard:logout")).status_code == 302
    assert dash.get(reverse("dashboard:home")).status_code == 302
