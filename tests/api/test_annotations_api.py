"""Annotations over the API: add, list, get, delete; audit, workspace isolation, scopes, bad input."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoints.models import Annotation, AuditEvent, Workspace
from tests.api.errors import assert_not_found
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

URL = "/api/v1/threads/t1/annotations/"


def add(api: ApiClient, body: dict[str, Any], url: str = URL) -> dict[str, Any]:
    response = api.post(url, body)
    assert response.status_code == 201, response.json()
    return dict(response.json())


def test_it_adds_annotations_to_a_checkpoint_and_to_the_thread_and_lists_them_newest_first(
    api: ApiClient, workspace: Workspace
) -> None:
    make_checkpoint(workspace, checkpoint_id="c1")
    on_checkpoint = add(api, {"comment": "Tool call was wrong", "verdict": "wrong", "checkpoint_id": "c1"})
    on_thread = add(api, {"comment": "Overall fine"})
    assert on_checkpoint["checkpoint_id"] == "c1" and on_checkpoint["verdict"] == "wrong"
    assert on_checkpoint["thread_id"] == "t1" and on_checkpoint["actor_type"] == "api_key"
    assert on_checkpoint["author"].startswith("key:")
    assert on_thread["checkpoint_id"] is None and on_thread["verdict"] is None
    assert (on_checkpoint["namespace"], on_thread["namespace"]) == ("", None)
    assert set(on_thread) == {
        "annotation_id",
        "thread_id",
        "checkpoint_id",
        "namespace",
        "comment",
        "verdict",
        "actor_type",
        "author",
        "created_at",
    }
    listed = api.get(URL)
    assert listed.status_code == 200
    assert [a["comment"] for a in listed.json()["results"]] == ["Overall fine", "Tool call was wrong"]
    page = api.get(URL, {"limit": "1"}).json()
    assert [a["comment"] for a in page["results"]] == ["Overall fine"]
    rest = api.get(page["next"]).json()
    assert [a["comment"] for a in rest["results"]] == ["Tool call was wrong"]


def test_it_gets_and_deletes_one_annotation_auditing_both_writes(
    api: ApiClient, workspace: Workspace
) -> None:
    make_checkpoint(workspace, checkpoint_id="c1", agent_id="planner")
    created = add(api, {"comment": "Check this", "verdict": "needs_review", "checkpoint_id": "c1"})
    detail_url = f"{URL}{created['annotation_id']}/"
    assert api.get(detail_url).json() == created
    assert api.delete(detail_url).status_code == 204
    assert_not_found(api.get(detail_url), f"Annotation {created['annotation_id']} not found in thread 't1'.")
    assert not Annotation.objects.exists()
    events = list(AuditEvent.objects.filter(target_type="annotation").order_by("id"))
    assert [e.action for e in events] == ["annotation.create", "annotation.delete"]
    assert events[1].details == {
        "thread_id": "t1",
        "checkpoint_id": "c1",
        "comment": "Check this",
        "verdict": "needs_review",
        "author": created["author"],
    }
    assert events[0].target_id == created["annotation_id"]
    assert list(events[0].agents.values_list("agent_id", flat=True)) == ["planner"]


def test_it_answers_404_for_another_workspaces_thread_and_annotation(
    api: ApiClient, other_api: ApiClient, workspace: Workspace
) -> None:
    make_checkpoint(workspace, checkpoint_id="c1")
    created = add(api, {"comment": "secret finding"})
    detail_url = f"{URL}{created['annotation_id']}/"
    assert_not_found(other_api.get(URL), "Thread 't1' not found.")
    assert_not_found(other_api.get(detail_url), "Thread 't1' not found.")
    assert_not_found(other_api.delete(detail_url), "Thread 't1' not found.")
    assert_not_found(other_api.post(URL, {"comment": "x"}), "Thread 't1' not found.")
    assert Annotation.objects.get().comment == "secret finding"


def test_it_answers_404_for_an_annotation_of_another_thread(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace, thread_id="t1")
    make_checkpoint(workspace, thread_id="t2")
    created = add(api, {"comment": "on t2"}, url="/api/v1/threads/t2/annotations/")
    response = api.get(f"{URL}{created['annotation_id']}/")
    assert_not_found(response, f"Annotation {created['annotation_id']} not found in thread 't1'.")


def test_it_refuses_a_checkpoint_of_another_thread(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace, thread_id="t1", checkpoint_id="c1")
    make_checkpoint(workspace, thread_id="t2", checkpoint_id="c2")
    response = api.post(URL, {"comment": "x", "checkpoint_id": "c2"})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert "c2" in response.json()["error"]["message"]
    assert not Annotation.objects.exists()


def test_it_needs_the_write_scope_to_add_or_delete_and_read_to_list(
    api: ApiClient, read_api: ApiClient, workspace: Workspace
) -> None:
    make_checkpoint(workspace)
    created = add(api, {"comment": "fine"})
    refused = read_api.post(URL, {"comment": "x"})
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == "This request needs the 'write' scope; the key has 'read'."
    assert read_api.delete(f"{URL}{created['annotation_id']}/").status_code == 403
    assert [a["comment"] for a in read_api.get(URL).json()["results"]] == ["fine"]
    assert Annotation.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"comment": "x", "colour": "red"}, "colour"),
        ({"comment": 5}, "comment"),
        ({"comment": ""}, "comment"),
        ({"comment": "a\x00b"}, "comment"),
        ({"comment": "x" * 5_001}, "comment"),
        ({"comment": "x", "verdict": "maybe"}, "verdict"),
        ({"comment": "x", "verdict": 1}, "verdict"),
        ({"comment": "x", "checkpoint_id": ["c1"]}, "checkpoint_id"),
        ({"comment": "x", "annotation_id": "a"}, "annotation_id"),
        ({"verdict": "wrong"}, "comment"),
    ],
)
def test_it_refuses_bad_input_in_the_error_envelope(
    api: ApiClient, workspace: Workspace, body: dict[str, Any], field: str
) -> None:
    make_checkpoint(workspace, checkpoint_id="c1")
    response = api.post(URL, body)
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert field in error["details"]["fields"], error
    assert not Annotation.objects.exists()


def test_it_accepts_a_comment_of_exactly_5000_characters(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace)
    assert len(add(api, {"comment": "x" * 5_000})["comment"]) == 5_000


def test_it_answers_404_for_a_malformed_annotation_id(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace)
    response = api.get(f"{URL}not-a-uuid/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_it_needs_the_namespace_of_a_checkpoint_id_found_in_several(
    api: ApiClient, workspace: Workspace
) -> None:
    make_checkpoint(workspace, checkpoint_id="c1")
    inner = make_checkpoint(workspace, checkpoint_id="c1", namespace="sub")
    ambiguous = api.post(URL, {"comment": "which one?", "checkpoint_id": "c1"})
    assert ambiguous.status_code == 409, ambiguous.json()
    assert ambiguous.json()["error"]["code"] == "ambiguous_id"
    created = add(api, {"comment": "this one", "checkpoint_id": "c1", "namespace": "sub"})
    assert (created["checkpoint_id"], created["namespace"]) == ("c1", "sub")
    assert Annotation.objects.get().checkpoint_id == inner.pk
