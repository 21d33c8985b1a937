"""Saving: thread auto-creation, parent and step defaults, parent validation, namespaces, idempotent retry."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoints.models import Checkpoint, Thread
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

CPS = "/api/v1/threads/t1/checkpoints/"


def _save(api: ApiClient, url: str = CPS, **body: Any) -> dict[str, Any]:
    response = api.post(url, {"agent_id": "a", "state": {"n": 1}, **body})
    assert response.status_code == 201, response.content
    return response.json()


def test_it_creates_the_thread_and_answers_the_full_representation(api: ApiClient) -> None:
    response = api.post(CPS, {"agent_id": "a", "state": {"n": 1}})
    body = response.json()
    assert response.status_code == 201
    assert set(body) == {
        "thread_id", "namespace", "checkpoint_id", "parent_id", "agent_id", "framework", "schema_version",
        "step_index", "step_name", "run_id", "state", "context", "metadata", "handoff_target", "handoff_from",
        "written_by", "message_seq", "checksum", "size_bytes", "created_at", "expires_at", "pinned",
        "expired_at",
    }  # fmt: skip
    assert (body["framework"], body["schema_version"], body["context"], body["metadata"]) == (
        "custom",
        "1.0",
        {},
        {},
    )
    assert body["size_bytes"] == len('{"n":1}') + len("{}") + len("{}")
    assert response["Location"] == f"{CPS}{body['checkpoint_id']}/?namespace="
    assert Thread.objects.filter(workspace=api.workspace, thread_id="t1").count() == 1
    assert (
        api.post(CPS, {"agent_id": "a", "state": {}}, QUERY_STRING="include_state=false").json().get("state")
        is None
    )


def test_it_omits_payloads_in_the_answer_when_asked(api: ApiClient) -> None:
    body = api.post(f"{CPS}?include_state=false", {"agent_id": "a", "state": {"n": 1}}).json()
    assert "state" not in body and "context" not in body and "metadata" not in body


def test_it_chains_parents_and_steps_per_namespace(api: ApiClient) -> None:
    a = _save(api)
    b = _save(api)
    sub = _save(api, namespace="sub")
    c = _save(api)
    sub2 = _save(api, f"{CPS}?namespace=sub")
    assert (a["parent_id"], a["step_index"]) == (None, 0)
    assert (b["parent_id"], b["step_index"]) == (a["checkpoint_id"], 1)
    assert (sub["parent_id"], sub["step_index"], sub["namespace"]) == (None, 0, "sub")
    assert (c["parent_id"], c["step_index"]) == (b["checkpoint_id"], 2)
    assert (sub2["parent_id"], sub2["step_index"], sub2["namespace"]) == (sub["checkpoint_id"], 1, "sub")


def test_it_uses_an_explicit_parent_and_step(api: ApiClient) -> None:
    first = _save(api, checkpoint_id="first", step_index=7)
    _save(api)
    branch = _save(api, parent_id="first")
    assert (branch["parent_id"], branch["step_index"]) == ("first", 8)
    explicit = _save(api, parent_id="first", step_index=42)
    assert explicit["step_index"] == 42
    root = _save(api, parent_id=None)
    assert (root["parent_id"], root["step_index"]) == (None, 0)
    assert first["step_index"] == 7


def test_it_refuses_a_parent_from_another_namespace_or_thread(api: ApiClient) -> None:
    _save(api, checkpoint_id="in-sub", namespace="sub")
    _save(api, "/api/v1/threads/t2/checkpoints/", checkpoint_id="in-t2")
    for parent in ("in-sub", "in-t2"):
        response = api.post(CPS, {"agent_id": "a", "state": {}, "parent_id": parent})
        assert response.status_code == 400
        assert response.json()["error"]["details"]["fields"] == {
            "parent_id": [f"No checkpoint {parent!r} in namespace '' of this thread."]
        }
    assert Checkpoint.objects.count() == 2


def test_it_answers_an_identical_retry_with_the_stored_checkpoint(api: ApiClient) -> None:
    body = {"checkpoint_id": "c2", "agent_id": "a", "state": {"n": 2}, "metadata": {"k": 1}}
    _save(api, checkpoint_id="c1")
    first = api.post(CPS, body)
    _save(api, checkpoint_id="c3")  # the head moves on before the retry arrives

    retry = api.post(CPS, body)

    assert (first.status_code, retry.status_code) == (201, 200)
    assert retry.json() == first.json()
    assert retry.json()["parent_id"] == "c1"
    assert Checkpoint.objects.count() == 3


def test_it_compares_the_fields_a_retry_sends(api: ApiClient) -> None:
    first = api.post(
        CPS, {"checkpoint_id": "c1", "agent_id": "a", "state": {}, "step_index": 0, "parent_id": None}
    )
    assert first.status_code == 201
    same = api.post(
        CPS, {"checkpoint_id": "c1", "agent_id": "a", "state": {}, "step_index": 0, "parent_id": None}
    )
    assert same.status_code == 200
    same_created = api.post(
        CPS, {"checkpoint_id": "c1", "agent_id": "a", "state": {}, "created_at": first.json()["created_at"]}
    )
    assert same_created.status_code == 200


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        ({"state": {"n": 9}}, ["state"]),
        ({"metadata": {"k": 2}}, ["metadata"]),
        ({"context": {"c": 1}}, ["context"]),
        ({"agent_id": "b"}, ["agent_id"]),
        ({"step_index": 5}, ["step_index"]),
        ({"parent_id": None}, ["parent_id"]),
        ({"framework": "autogen", "run_id": "r"}, ["framework", "run_id"]),
        ({"created_at": "2020-01-01T00:00:00Z"}, ["created_at"]),
        ({"checksum": "0" * 64}, ["checksum"]),
    ],
)
def test_it_answers_409_to_a_different_checkpoint_under_a_used_id(
    api: ApiClient, change: dict[str, Any], fields: list[str]
) -> None:
    _save(api, checkpoint_id="c0")
    _save(api, checkpoint_id="c1", metadata={"k": 1})
    response = api.post(
        CPS, {"checkpoint_id": "c1", "agent_id": "a", "state": {"n": 1}, "metadata": {"k": 1}, **change}
    )
    assert response.status_code == 409
    assert response.json()["error"] == {
        "code": "conflict",
        "message": "A different checkpoint with this id already exists.",
        "details": {"checkpoint_id": "c1", "differing_fields": fields},
    }
    assert Checkpoint.objects.count() == 2


def test_it_allows_one_id_in_two_namespaces_and_two_threads(api: ApiClient) -> None:
    a = _save(api, checkpoint_id="same")
    b = _save(api, checkpoint_id="same", namespace="sub")
    c = _save(api, "/api/v1/threads/t2/checkpoints/", checkpoint_id="same")
    assert len({a["checksum"], b["checksum"], c["checksum"]}) == 3
    assert Checkpoint.objects.filter(checkpoint_id="same").count() == 3
