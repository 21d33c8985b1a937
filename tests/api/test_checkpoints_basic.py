"""Save and restore through the API: the first whole flow of the foundation."""

from __future__ import annotations

import pytest

from checkpoints.integrity import record_checksum
from checkpoints.models import Checkpoint
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

URL = "/api/v1/threads/t1/checkpoints/"


def test_it_saves_creating_the_thread_and_restores_with_a_verified_checksum(api: ApiClient) -> None:
    state = {"when": "2026-01-01T00:00:00+00:00", "big": 2**80, "pi": 3.141592653589793, "t": "決定"}
    saved = api.post(URL, {"agent_id": "planner", "state": state, "metadata": {"source": "input"}})
    assert saved.status_code == 201, saved.json()
    body = saved.json()
    assert body["thread_id"] == "t1" and body["parent_id"] is None and body["step_index"] == 0

    restored = api.get(f"{URL}{body['checkpoint_id']}/")
    assert restored.status_code == 200
    assert restored["X-Checksum-Verified"] == "true"
    assert restored.json()["state"] == state
    assert record_checksum(restored.json()) == body["checksum"]


def test_it_defaults_the_parent_to_the_head_and_the_step_to_parent_plus_one(api: ApiClient) -> None:
    first = api.post(URL, {"agent_id": "a", "state": {"n": 1}}).json()
    second = api.post(URL, {"agent_id": "a", "state": {"n": 2}}).json()
    assert second["parent_id"] == first["checkpoint_id"]
    assert second["step_index"] == 1


def test_it_is_idempotent_for_the_same_id_and_content_and_conflicts_otherwise(api: ApiClient) -> None:
    payload = {"checkpoint_id": "c-1", "agent_id": "a", "state": {"n": 1}}
    assert api.post(URL, payload).status_code == 201
    retry = api.post(URL, payload)
    assert retry.status_code == 200
    conflict = api.post(URL, {**payload, "state": {"n": 2}})
    assert conflict.status_code == 409
    assert conflict.json()["error"]["code"] == "conflict"
    assert conflict.json()["error"]["details"]["differing_fields"] == ["state"]
    assert Checkpoint.objects.count() == 1


def test_it_detects_tampering_on_restore(api: ApiClient) -> None:
    saved = api.post(URL, {"agent_id": "a", "state": {"n": 1}}).json()
    Checkpoint.objects.filter(checkpoint_id=saved["checkpoint_id"]).update(metadata='{"forged":true}')
    restored = api.get(f"{URL}{saved['checkpoint_id']}/")
    assert restored.status_code == 409
    assert restored.json()["error"]["code"] == "checksum_mismatch"


def test_it_answers_404_for_another_workspaces_checkpoint(api: ApiClient, other_api: ApiClient) -> None:
    saved = api.post(URL, {"agent_id": "a", "state": {"n": 1}}).json()
    response = other_api.get(f"{URL}{saved['checkpoint_id']}/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_it_rejects_unknown_fields_and_wrong_types(api: ApiClient) -> None:
    unknown = api.post(URL, {"agent_id": "a", "state": {}, "surprise": 1})
    assert unknown.status_code == 400
    assert unknown.json()["error"]["details"]["fields"] == {"surprise": ["Unknown field."]}
    wrong = api.post(URL, {"agent_id": 5, "state": {}})
    assert wrong.status_code == 400
    assert "agent_id" in wrong.json()["error"]["details"]["fields"]
