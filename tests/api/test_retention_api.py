"""`GET/PUT retention/`, `POST retention/preview/`, `POST retention/sweep/`."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.test import override_settings
from django.utils import timezone

from checkpoints.models import AuditEvent, Checkpoint, Job, Workspace
from tests.conftest import ApiClient
from tests.factories import make_checkpoint
from tests.jobs.helpers import broker_down

pytestmark = pytest.mark.django_db

POLICY = "/api/v1/retention/"
PREVIEW = "/api/v1/retention/preview/"
SWEEP = "/api/v1/retention/sweep/"
DEFAULT_POLICY = {
    "default_ttl_seconds": None,
    "keep_latest": None,
    "thread_idle_ttl_seconds": None,
    "tombstone_retention_seconds": 30 * 24 * 3600,
    "auto_summarize_every": None,
}


def error(response: Any) -> dict[str, Any]:
    return response.json()["error"]


def test_it_shows_the_policy_to_any_key(read_api: ApiClient, django_assert_num_queries: Any) -> None:
    read_api.get(POLICY)
    with django_assert_num_queries(0):  # the key and its workspace are remembered: the policy lives there
        response = read_api.get(POLICY)
    assert response.status_code == 200
    assert response.json() == DEFAULT_POLICY


def test_it_changes_the_policy_with_an_admin_key_keeping_fields_left_out(admin_api: ApiClient) -> None:
    response = admin_api.put(POLICY, {"keep_latest": 10, "default_ttl_seconds": 86400})
    assert response.status_code == 200
    assert response.json() == {**DEFAULT_POLICY, "keep_latest": 10, "default_ttl_seconds": 86400}
    response = admin_api.put(POLICY, {"keep_latest": None, "tombstone_retention_seconds": 3600})
    assert response.json() == {
        **DEFAULT_POLICY,
        "default_ttl_seconds": 86400,
        "tombstone_retention_seconds": 3600,
    }
    stored = Workspace.objects.get(pk=admin_api.workspace.pk)
    assert (stored.keep_latest, stored.default_ttl_seconds, stored.tombstone_retention_seconds) == (
        None,
        86400,
        3600,
    )
    events = AuditEvent.objects.filter(action="retention.policy").order_by("id")
    assert [e.details["after"]["keep_latest"] for e in events] == [10, None]
    assert events[0].actor_label == f"key:{admin_api.key.prefix} (test-admin)"


def test_it_applies_the_default_ttl_to_checkpoints_saved_afterwards(admin_api: ApiClient) -> None:
    admin_api.put(POLICY, {"default_ttl_seconds": 60})
    saved = admin_api.post("/api/v1/threads/t1/checkpoints/", {"agent_id": "a", "state": {}}).json()
    assert saved["expires_at"] is not None


@pytest.mark.parametrize("scope_client", ["api", "read_api"])
def test_it_refuses_policy_changes_below_admin_scope(
    scope_client: str, request: pytest.FixtureRequest
) -> None:
    client: ApiClient = request.getfixturevalue(scope_client)
    response = client.put(POLICY, {"keep_latest": 1})
    assert response.status_code == 403
    assert error(response)["code"] == "permission_denied"
    assert Workspace.objects.get(pk=client.workspace.pk).keep_latest is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"keep_latest": "5"}, "keep_latest"),
        ({"keep_latest": 5.0}, "keep_latest"),
        ({"keep_latest": True}, "keep_latest"),
        ({"keep_latest": 0}, "keep_latest"),
        ({"keep_latest": -1}, "keep_latest"),
        ({"keep_latest": 2**31}, "keep_latest"),
        ({"default_ttl_seconds": 0}, "default_ttl_seconds"),
        ({"default_ttl_seconds": 10**12}, "default_ttl_seconds"),
        ({"thread_idle_ttl_seconds": [1]}, "thread_idle_ttl_seconds"),
        ({"tombstone_retention_seconds": 0}, "tombstone_retention_seconds"),
        ({"auto_summarize_every": {"n": 1}}, "auto_summarize_every"),
        ({"slug": "evil"}, "slug"),
        ({"keep_latest\u0000": 1}, "keep_latest\u0000"),
    ],
)
def test_it_refuses_wrong_types_bounds_and_unknown_fields(
    admin_api: ApiClient, body: dict[str, Any], field: str
) -> None:
    response = admin_api.put(POLICY, body)
    assert response.status_code == 400, response.content
    assert error(response)["code"] == "validation_error"
    assert field in error(response)["details"]["fields"]
    assert Workspace.objects.get(pk=admin_api.workspace.pk).keep_latest is None


@pytest.mark.parametrize(
    "raw", ["{}", "[]", '"keep_latest"', "null", '{"keep_latest": 1, "keep_latest": 2}', "{"]
)
def test_it_refuses_bodies_that_are_not_a_policy_object(admin_api: ApiClient, raw: str) -> None:
    response = admin_api.put(POLICY, raw, content_type="application/json")
    assert response.status_code == 400
    assert error(response)["code"] == "validation_error"


def test_it_refuses_deep_and_huge_bodies(admin_api: ApiClient) -> None:
    deep = admin_api.put(
        POLICY, '{"keep_latest": ' + "[" * 200 + "]" * 200 + "}", content_type="application/json"
    )
    assert deep.status_code == 400
    with override_settings(CAIRN_MAX_BODY_BYTES=100):
        huge = admin_api.put(
            POLICY, json.dumps({"keep_latest": 1, "pad": "x" * 200}), content_type="application/json"
        )
    assert huge.status_code == 413
    assert error(huge)["code"] == "payload_too_large"


def test_it_previews_for_a_read_key_without_changing_anything(
    read_api: ApiClient, other_api: ApiClient, time_machine: time_machine.TimeMachineFixture
) -> None:
    now = timezone.now()
    time_machine.move_to(now, tick=False)
    expired = make_checkpoint(read_api.workspace, "t1", ttl_seconds=5)
    make_checkpoint(other_api.workspace, "t1", ttl_seconds=5)
    time_machine.move_to(now + timedelta(seconds=5), tick=False)

    response = read_api.post(PREVIEW)
    assert response.status_code == 200
    body = response.json()
    assert body["expired"] == {
        "count": 1,
        "sample": [{"thread_id": "t1", "namespace": "", "checkpoint_id": expired.checkpoint_id}],
    }
    assert body["pruned"] == body["purged"] == body["idle_threads"] == {"count": 0, "sample": []}
    assert body["policy"] == DEFAULT_POLICY
    assert read_api.post(PREVIEW, {}).json() == body
    assert Checkpoint.objects.get(pk=expired.pk).state is not None


def test_it_refuses_parameters_on_preview_and_sweep(admin_api: ApiClient) -> None:
    for url in (PREVIEW, SWEEP):
        response = admin_api.post(url, {"workspace": "globex"})
        assert response.status_code == 400
        assert error(response)["details"]["fields"] == {"workspace": ["Unknown field."]}
    assert not Job.objects.exists()


def test_it_runs_a_sweep_now_as_a_tracked_job(
    api: ApiClient, django_capture_on_commit_callbacks: Any, time_machine: time_machine.TimeMachineFixture
) -> None:
    now = timezone.now()
    time_machine.move_to(now, tick=False)
    make_checkpoint(api.workspace, "t1", ttl_seconds=1)
    time_machine.move_to(now + timedelta(seconds=1), tick=False)

    with override_settings(CELERY_TASK_ALWAYS_EAGER=True), django_capture_on_commit_callbacks(execute=True):
        response = api.post(SWEEP)
        assert response.status_code == 202
        queued = response.json()
        assert (queued["kind"], queued["status"], queued["attempts"]) == ("sweep", "queued", 0)
        assert queued["requested_by"] == f"key:{api.key.prefix} (test-write)"
        assert response["Location"] == f"/api/v1/jobs/{queued['job_id']}/"

    done = api.get(response["Location"]).json()
    assert (done["status"], done["attempts"]) == ("succeeded", 1)
    assert done["result"] == {"expired": 1, "pruned": 0, "workspaces": 1}
    event = AuditEvent.objects.get(action="retention.sweep")
    assert event.actor_label == f"key:{api.key.prefix} (test-write)"  # audited in the name of who asked


def test_it_refuses_sweep_now_to_a_read_key(read_api: ApiClient) -> None:
    assert read_api.post(SWEEP).status_code == 403
    assert not Job.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_it_answers_503_and_keeps_no_job_when_the_broker_is_down(api: ApiClient) -> None:
    with broker_down():
        response = api.post(SWEEP)
    assert response.status_code == 503
    assert error(response)["code"] == "unavailable"
    assert not Job.objects.exists()
    assert api.get("/api/v1/jobs/").json()["results"] == []


def test_it_keeps_tombstones_forever_when_their_retention_is_null(admin_api: ApiClient) -> None:
    response = admin_api.put(POLICY, {"tombstone_retention_seconds": None})
    assert response.status_code == 200, response.content
    assert response.json()["tombstone_retention_seconds"] is None
    assert Workspace.objects.get(pk=admin_api.workspace.pk).tombstone_retention_seconds is None
