"""Handoff: the state travels to another agent as a child checkpoint owned by it, listed in its inbox."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoints.integrity import record_checksum
from checkpoints.models import AuditEvent, Workspace
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

CPS = "/api/v1/threads/t1/checkpoints/"


@pytest.fixture
def source(api: ApiClient) -> dict[str, Any]:
    api.post(CPS, {"checkpoint_id": "root", "agent_id": "planner", "state": {"n": 0}})
    body = {
        "checkpoint_id": "src",
        "agent_id": "planner",
        "framework": "langgraph",
        "schema_version": "3",
        "step_index": 7,
        "step_name": "review",
        "run_id": "run-1",
        "state": {"todo": ["ship"], "big": 2**80},
        "context": {"from": "planner"},
        "metadata": {"priority": "high", "tags": ["a"]},
    }
    response = api.post(CPS, body)
    assert response.status_code == 201
    return response.json()


def test_it_hands_the_state_to_the_target_agent(api: ApiClient, source: dict[str, Any]) -> None:
    response = api.post(f"{CPS}src/handoff/", {"target_agent_id": "approver"})

    assert response.status_code == 201
    handed = response.json()
    assert handed["agent_id"] == "approver"
    assert handed["handoff_from"] == "planner"
    assert handed["handoff_target"] == "approver"
    assert handed["parent_id"] == "src"
    assert handed["step_index"] == 8
    assert handed["state"] == source["state"]
    assert handed["metadata"] == source["metadata"]
    assert handed["context"] == source["context"]
    for kept in ("framework", "schema_version", "step_name", "run_id", "namespace"):
        assert handed[kept] == source[kept], kept
    assert handed["checkpoint_id"] != "src"
    assert response["Location"] == f"{CPS}{handed['checkpoint_id']}/?namespace="
    assert record_checksum(handed) == handed["checksum"]
    restored = api.get(f"{CPS}{handed['checkpoint_id']}/")
    assert restored.status_code == 200 and restored["X-Checksum-Verified"] == "true"


def test_it_lists_the_handoff_in_the_target_agents_inbox(api: ApiClient, source: dict[str, Any]) -> None:
    handed = api.post(f"{CPS}src/handoff/", {"target_agent_id": "approver"}).json()
    api.post(f"{CPS}root/handoff/", {"target_agent_id": "someone-else"})
    inbox = api.get("/api/v1/checkpoints/", {"handoff_target": "approver"}).json()["results"]
    assert [c["checkpoint_id"] for c in inbox] == [handed["checkpoint_id"]]
    assert api.get("/api/v1/checkpoints/", {"handoff_target": "planner"}).json()["results"] == []


def test_it_replaces_the_context_and_sets_a_ttl_when_asked(api: ApiClient, source: dict[str, Any]) -> None:
    handed = api.post(
        f"{CPS}src/handoff/",
        {"target_agent_id": "approver", "context": {"note": "please"}, "ttl_seconds": 60},
    ).json()
    assert handed["context"] == {"note": "please"}
    assert handed["state"] == source["state"]
    assert handed["expires_at"] is not None


def test_it_moves_the_head_and_branches_from_an_older_checkpoint(
    api: ApiClient, source: dict[str, Any]
) -> None:
    handed = api.post(f"{CPS}root/handoff/", {"target_agent_id": "approver"}).json()
    assert handed["parent_id"] == "root" and handed["step_index"] == 1
    assert api.get("/api/v1/threads/t1/state/").json()["checkpoint_id"] == handed["checkpoint_id"]


def test_it_keeps_the_namespace(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="n1", namespace="sub")
    handed = api.post(f"{CPS}n1/handoff/?namespace=sub", {"target_agent_id": "b"}).json()
    assert handed["namespace"] == "sub" and handed["parent_id"] == "n1"


def test_it_audits_the_handoff(api: ApiClient, source: dict[str, Any]) -> None:
    handed = api.post(f"{CPS}src/handoff/", {"target_agent_id": "approver"}).json()
    event = AuditEvent.objects.get(action="checkpoint.handoff")
    assert event.target_id == f"t1//{handed['checkpoint_id']}"
    assert event.details == {"from_checkpoint": "src", "from_agent": "planner", "to_agent": "approver"}
    assert event.actor_api_key_id == api.key.pk


def test_it_answers_404_for_an_unknown_source(api: ApiClient) -> None:
    response = api.post(f"{CPS}nope/handoff/", {"target_agent_id": "b"})
    assert response.status_code == 404
    assert not AuditEvent.objects.filter(action="checkpoint.handoff").exists()


def test_the_inbox_filters_by_status_taken_once_the_target_saves_whatever_its_parent(
    api: ApiClient, source: dict[str, Any]
) -> None:
    handed = api.post(f"{CPS}src/handoff/", {"target_agent_id": "approver"}).json()
    inbox = "/api/v1/checkpoints/?handoff_target=approver&handoff_status="
    pending = api.get(f"{inbox}pending").json()["results"]
    assert [c["checkpoint_id"] for c in pending] == [handed["checkpoint_id"]]
    assert api.get(f"{inbox}taken").json()["results"] == []
    # The target continues from another checkpoint (as LangGraph's saver does): the handoff is taken.
    saved = api.post(CPS, {"checkpoint_id": "next", "agent_id": "approver", "parent_id": "root", "state": {}})
    assert saved.status_code == 201
    assert api.get(f"{inbox}pending").json()["results"] == []
    taken = api.get(f"{inbox}taken").json()["results"]
    assert [c["checkpoint_id"] for c in taken] == [handed["checkpoint_id"]]


def test_an_unknown_handoff_status_is_a_400_in_the_envelope(api: ApiClient) -> None:
    response = api.get("/api/v1/checkpoints/?handoff_status=lost")
    assert response.status_code == 400
    body = response.json()
    assert body["error"]["code"] == "validation_error" and "handoff_status" in str(body["error"])
