"""Every action refuses a POST without a CSRF token (generated from the URL patterns), and changes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from checkpoints.models import ApiKey, AuditEvent, Checkpoint, Thread
from checkpoints.services.workspaces import api_key_create
from tests.dashboard.test_access import urls_for
from tests.dashboard.world import World

pytestmark = pytest.mark.django_db


def test_it_refuses_every_action_without_a_csrf_token(world: World, staff: User) -> None:
    key = api_key_create(workspace=world.workspace, name="ci")[0]
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    actions = [(name, url) for name, url, action in urls_for(world, key) if action]
    assert len(actions) >= 9
    before = (
        AuditEvent.objects.count(),
        Thread.objects.count(),
        ApiKey.objects.filter(revoked_at=None).count(),
        Checkpoint.objects.filter(expired_at=None, pinned=False).count(),
    )
    for name, url in actions:
        response = client.post(url, {"strategy": "delete", "name": "x", "scope": "admin", "ttl_seconds": "5"})
        assert response.status_code == 403, name
        assert b"CSRF" in response.content, name
    after = (
        AuditEvent.objects.count(),
        Thread.objects.count(),
        ApiKey.objects.filter(revoked_at=None).count(),
        Checkpoint.objects.filter(expired_at=None, pinned=False).count(),
    )
    assert after == before
    # With the token from the confirmation page the same POST goes through.
    page = client.get(reverse("dashboard:key-revoke", args=[world.workspace.slug, key.prefix]))
    token = page.cookies["csrftoken"].value
    response = client.post(
        reverse("dashboard:key-revoke", args=[world.workspace.slug, key.prefix]),
        {"csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None


def test_it_refuses_logout_without_a_csrf_token(staff: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    assert client.post(reverse("dashboard:logout")).status_code == 403
    assert client.get(reverse("dashboard:home"), follow=True).status_code == 200  # still logged in
