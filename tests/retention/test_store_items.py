"""Store items in the retention preview (what the next store sweep deletes) and in the store export (every
live item, without vectors): the service, the API and the dashboard."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import Client
from django.urls import reverse

from checkpoints.models import StoreItem, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.retention import retention_preview
from checkpoints.services.store import store_export, store_put, store_sweep_expired
from tests.conftest import ApiClient
from tests.dashboard.world import make_user

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC)
ACTOR = Actor.system("test")


@pytest.fixture
def items(
    workspace: Workspace, other_workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    """At T0 + 10 min: two items past their TTL, one with a TTL still running, one without; another
    workspace's expired item."""
    time_machine.move_to(T0, tick=False)
    store_put(workspace=workspace, actor=ACTOR, namespace=["users", "alice"], key="a", value={"n": 1}, ttl=5)
    store_put(workspace=workspace, actor=ACTOR, namespace=["users", "bob"], key="b", value={"n": 2}, ttl=1)
    store_put(workspace=workspace, actor=ACTOR, namespace=["users", "carol"], key="c", value={"n": 3}, ttl=60)
    store_put(
        workspace=workspace, actor=ACTOR, namespace=["docs"], key="d", value={"text": "kept"}, index=False
    )
    store_put(workspace=other_workspace, actor=ACTOR, namespace=["theirs"], key="x", value={}, ttl=1)
    time_machine.move_to(T0 + timedelta(minutes=10), tick=False)


@pytest.mark.usefixtures("items")
def test_the_preview_counts_the_store_items_the_next_sweep_deletes(workspace: Workspace) -> None:
    preview = retention_preview(workspace=workspace)
    assert preview["store_items"] == {
        "count": 2,
        "sample": [
            {"namespace": ["users", "alice"], "key": "a"},
            {"namespace": ["users", "bob"], "key": "b"},
        ],
    }
    assert StoreItem.objects.count() == 5  # a preview changes nothing
    assert store_sweep_expired() == 3  # what it said, plus the other workspace's
    assert retention_preview(workspace=workspace)["store_items"] == {"count": 0, "sample": []}


@pytest.mark.usefixtures("items")
def test_the_preview_api_answers_the_store_items(read_api: ApiClient) -> None:
    response = read_api.post("/api/v1/retention/preview/", {}, format="json")
    assert response.status_code == 200
    assert response.json()["store_items"]["count"] == 2
    assert [s["key"] for s in response.json()["store_items"]["sample"]] == ["a", "b"]


@pytest.mark.usefixtures("items")
def test_the_export_has_every_live_item_without_vectors(workspace: Workspace) -> None:
    exported = list(store_export(workspace=workspace))
    assert [(e["namespace"], e["key"]) for e in exported] == [(["users", "carol"], "c"), (["docs"], "d")]
    carol = exported[0]
    assert set(carol) == {"namespace", "key", "value", "created_at", "updated_at", "expires_at"}
    assert carol["value"] == {"n": 3} and carol["expires_at"] == (T0 + timedelta(minutes=60)).isoformat()
    assert exported[1]["expires_at"] is None
    assert [e["key"] for e in store_export(workspace=workspace, namespace_prefix=["docs"])] == ["d"]
    # Exporting is not reading: the TTL is not pushed back.
    assert StoreItem.objects.get(key="c").expires_at == T0 + timedelta(minutes=60)


@pytest.mark.usefixtures("items")
def test_the_dashboard_previews_and_exports_store_items(client: Client, workspace: Workspace) -> None:
    client.force_login(make_user("alice", workspaces=(workspace,)))
    page = client.get(reverse("dashboard:retention", args=[workspace.slug])).content.decode()
    assert "Expired store items to delete" in page and "?ns=users.alice" in page
    store_page = client.get(
        reverse("dashboard:store", args=[workspace.slug]), {"ns": "users"}
    ).content.decode()
    assert reverse("dashboard:store-export-json", args=[workspace.slug]) + "?ns=users" in store_page
    response = client.get(reverse("dashboard:store-export-json", args=[workspace.slug]))
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    body = json.loads(b"".join(response.streaming_content))  # type: ignore[attr-defined]
    assert body["workspace"] == workspace.slug and body["namespace"] == []
    assert [item["key"] for item in body["items"]] == ["c", "d"]
    under = client.get(reverse("dashboard:store-export-json", args=[workspace.slug]), {"ns": "users"})
    assert [item["key"] for item in json.loads(b"".join(under.streaming_content))["items"]] == ["c"]  # type: ignore[attr-defined]
