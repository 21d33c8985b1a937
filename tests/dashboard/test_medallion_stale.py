"""Mark a medallion stale from its page: a confirmation, then a new version through the same service as the
API's PATCH, audited with the user."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.models import AuditEvent, Medallion
from tests.dashboard.world import World

pytestmark = pytest.mark.django_db


def test_it_marks_a_medallion_stale_after_a_confirmation(dash: Client, world: World) -> None:
    medallion = world.medallion
    page_url = reverse("dashboard:medallion", args=[world.workspace.slug, medallion.medallion_id])
    stale_url = reverse("dashboard:medallion-stale", args=[world.workspace.slug, medallion.medallion_id])
    assert f'href="{stale_url}" data-mark-stale' in dash.get(page_url).content.decode()
    confirm = dash.get(stale_url)
    assert confirm.status_code == 200 and "no longer served as the active summary" in confirm.content.decode()
    version = Medallion.objects.get(pk=medallion.pk).version
    response = dash.post(stale_url)
    assert response.status_code == 302 and response["Location"] == page_url
    medallion.refresh_from_db()
    assert (medallion.status, medallion.version) == ("stale", version + 1)
    event = AuditEvent.objects.filter(action="medallion.update").latest("id")
    assert event.actor_label == "user:alice" and event.details["status"] == ["active", "stale"]
    assert "data-mark-stale" not in dash.get(page_url).content.decode()


def test_it_refuses_another_workspace_medallion(dash: Client, world: World) -> None:
    url = reverse(
        "dashboard:medallion-stale", args=[world.workspace.slug, "0197c5b4-0000-7000-8000-000000000000"]
    )
    assert dash.post(url).status_code == 404
