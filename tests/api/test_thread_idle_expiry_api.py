"""The thread detail says when the idle-thread expiry deletes the thread and by which rule
(docs/retention.md): the date the expiry acts on, for each rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
import yaml
from rest_framework.test import APIClient

from checkpoints.models import Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.retention import retention_policy_update, threads_expire_idle
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

URL = "/api/v1/threads/"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WEEK = 7 * 86400


def expiry(api: ApiClient, thread_id: str) -> tuple[Any, Any]:
    response = api.get(f"{URL}{thread_id}/")
    assert response.status_code == 200, response.json()
    body = response.json()
    return body["effective_expires_at"], body["expiry_source"]


@pytest.fixture
def weekly(api: ApiClient) -> Workspace:
    """The API client's workspace, deleting threads idle for a week."""
    workspace: Workspace = api.workspace
    retention_policy_update(workspace=workspace, actor=Actor.system("test"), thread_idle_ttl_seconds=WEEK)
    return workspace


def test_a_thread_with_its_own_idle_expiry_shows_its_own_date(api: ApiClient, weekly: Workspace) -> None:
    with time_machine.travel(T0, tick=False):
        created = api.post(URL, {"thread_id": "audited", "ttl_seconds": 90 * 86400}).json()
    assert (created["effective_expires_at"], created["expiry_source"]) == (
        "2026-05-30T12:00:00.000000Z",
        "thread",
    )
    assert created["expires_at"] == created["effective_expires_at"]
    assert expiry(api, "audited") == ("2026-05-30T12:00:00.000000Z", "thread")
    # Longer than the workspace's week, and kept past it.
    with time_machine.travel(T0 + timedelta(days=8), tick=False):
        assert threads_expire_idle() == 0
    assert expiry(api, "audited") == ("2026-05-30T12:00:00.000000Z", "thread")


def test_a_thread_without_its_own_idle_expiry_shows_the_workspace_rule(
    api: ApiClient, weekly: Workspace
) -> None:
    with time_machine.travel(T0, tick=False):
        created = api.post(URL, {"thread_id": "plain"}).json()
    assert (created["expires_at"], created["ttl_seconds"]) == (None, None)
    assert (created["effective_expires_at"], created["expiry_source"]) == (
        "2026-03-08T12:00:00.000000Z",
        "workspace",
    )
    # A write restarts the idle clock; a policy change shows at once.
    with time_machine.travel(T0 + timedelta(days=1), tick=False):
        make_checkpoint(weekly, "plain")
    assert expiry(api, "plain") == ("2026-03-09T12:00:00.000000Z", "workspace")
    retention_policy_update(workspace=weekly, actor=Actor.system("test"), thread_idle_ttl_seconds=3600)
    assert expiry(api, "plain") == ("2026-03-02T13:00:00.000000Z", "workspace")
    with time_machine.travel(T0 + timedelta(days=1, hours=1), tick=False):
        assert threads_expire_idle() == 1
    assert api.get(f"{URL}plain/").status_code == 404


def test_a_pinned_thread_and_a_thread_holding_a_pinned_checkpoint_show_never(
    api: ApiClient, weekly: Workspace
) -> None:
    with time_machine.travel(T0, tick=False):
        api.post(URL, {"thread_id": "pinned", "pinned": True, "ttl_seconds": 60})
        checkpoint = make_checkpoint(weekly, "holds-pin")
    assert expiry(api, "pinned") == (None, "pinned")
    assert expiry(api, "holds-pin") == ("2026-03-08T12:00:00.000000Z", "workspace")

    with time_machine.travel(T0 + timedelta(hours=1), tick=False):
        pin = api.post(f"{URL}holds-pin/checkpoints/{checkpoint.checkpoint_id}/ttl/", {"pinned": True})
    assert pin.status_code == 200, pin.json()
    assert expiry(api, "holds-pin") == (None, "pinned")
    with time_machine.travel(T0 + timedelta(days=400), tick=False):
        assert threads_expire_idle() == 0
    assert api.get(f"{URL}holds-pin/checkpoints/{checkpoint.checkpoint_id}/").status_code == 200

    with time_machine.travel(T0 + timedelta(days=400), tick=False):
        api.post(f"{URL}holds-pin/checkpoints/{checkpoint.checkpoint_id}/ttl/", {"pinned": False})
        api.patch(f"{URL}pinned/", {"pinned": False})
    assert expiry(api, "holds-pin") == ("2027-04-12T12:00:00.000000Z", "workspace")
    assert expiry(api, "pinned") == ("2027-04-05T12:01:00.000000Z", "thread")


def test_a_thread_no_rule_applies_to_shows_null(api: ApiClient) -> None:
    api.post(URL, {"thread_id": "forever"})
    assert expiry(api, "forever") == (None, None)


def test_the_effective_date_is_read_only(api: ApiClient) -> None:
    for field in ("effective_expires_at", "expiry_source"):
        response = api.post(URL, {"thread_id": "t1", field: None})
        assert response.status_code == 400, field
        assert field in str(response.json()), field


def test_the_schema_documents_the_effective_date_and_its_rules() -> None:
    document = yaml.safe_load(APIClient().get("/api/v1/schema/").content)
    properties = document["components"]["schemas"]["ThreadDetail"]["properties"]
    assert properties["effective_expires_at"]["format"] == "date-time"
    assert properties["effective_expires_at"]["nullable"] is True
    assert properties["expiry_source"]["oneOf"][0] == {"$ref": "#/components/schemas/ExpirySourceEnum"}
    assert document["components"]["schemas"]["ExpirySourceEnum"]["enum"] == ["pinned", "thread", "workspace"]


def test_the_preview_lists_exactly_the_threads_the_expiry_then_deletes(api: ApiClient) -> None:
    workspace = api.workspace
    with time_machine.travel(T0, tick=False):
        api.post("/api/v1/retention/preview/", {})  # the key and its workspace are remembered from here on
        api.post(URL, {"thread_id": "own-long", "ttl_seconds": 90 * 86400})
        api.post(URL, {"thread_id": "own-short", "ttl_seconds": 3600})
        api.post(URL, {"thread_id": "plain"})
        kept = make_checkpoint(workspace, "holds-pin")
        api.post(f"{URL}holds-pin/checkpoints/{kept.checkpoint_id}/ttl/", {"pinned": True})
    # A policy written around Cairn (no notice to the processes that remember the key's workspace).
    Workspace.objects.filter(pk=workspace.pk).update(thread_idle_ttl_seconds=WEEK)

    with time_machine.travel(T0 + timedelta(days=8), tick=False):
        preview = api.post("/api/v1/retention/preview/", {}).json()
        listed = {s["thread_id"] for s in preview["idle_threads"]["sample"]}
        assert (listed, preview["idle_threads"]["count"]) == ({"own-short", "plain"}, 2)
        assert preview["policy"]["thread_idle_ttl_seconds"] == WEEK
        assert threads_expire_idle() == 2
        remaining = {t["thread_id"] for t in api.get(URL).json()["results"]}
    assert remaining == {"own-long", "holds-pin"}
