"""Threads over the API: create, list (filters, orderings, keyset pages), detail with stats, patch, delete."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from checkpoints.api.serializers.threads import ThreadDetailSerializer, ThreadSerializer
from checkpoints.models import AuditEvent, Checkpoint, Medallion, Message, PendingWrite, Thread
from checkpoints.services.messages import messages_append
from tests.conftest import ApiClient
from tests.factories import make_checkpoint, make_pending_write

pytestmark = pytest.mark.django_db

URL = "/api/v1/threads/"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def ids(response: Any) -> list[str]:
    assert response.status_code == 200, response.json()
    return [t["thread_id"] for t in response.json()["results"]]


def test_it_creates_a_thread_with_every_field_and_renders_the_contract_shape(api: ApiClient) -> None:
    with time_machine.travel(T0, tick=False):
        response = api.post(
            URL,
            {
                "thread_id": "conv-1",
                "name": "Weather",
                "user_id": "alice",
                "tags": ["weather", " geo ", "weather"],
                "metadata": {"channel": "web", "n": 1},
                "scope": {"graph_nodes": ["b", "a", "a"], "tags": [" x "]},
                "ttl_seconds": 3600,
            },
        )
    assert response.status_code == 201, response.json()
    assert response["Location"] == "/api/v1/threads/conv-1/"
    assert response.json() == {
        "thread_id": "conv-1",
        "user_id": "alice",
        "name": "Weather",
        "tags": ["weather", "geo"],
        "metadata": {"channel": "web", "n": 1},
        "scope": {"graph_nodes": ["a", "b"], "tags": ["x"]},
        "ttl_seconds": 3600,
        "expires_at": "2026-03-01T13:00:00.000000Z",
        "pinned": False,
        "forked_from": None,
        "created_at": "2026-03-01T12:00:00.000000Z",
        "updated_at": "2026-03-01T12:00:00.000000Z",
        "message_count": 0,
        "checkpoint_count": 0,
        "storage_bytes": 0,
        "storage": {"logical_bytes": 0, "stored_bytes": 0},
        "head": None,
        "effective_expires_at": "2026-03-01T13:00:00.000000Z",
        "expiry_source": "thread",
    }
    # The schema serializer declares exactly the keys the view renders.
    assert set(ThreadDetailSerializer().fields) == set(response.json())
    event = AuditEvent.objects.get(action="thread.create")
    assert event.target_id == "conv-1" and event.actor_api_key_id == api.key.pk


def test_it_assigns_a_uuid7_thread_id_when_none_is_given(api: ApiClient) -> None:
    first = api.post(URL, {}).json()["thread_id"]
    second = api.post(URL, {}).json()["thread_id"]
    assert len(first) == 36 and first[14] == "7" and first < second


def test_it_refuses_a_duplicate_thread_id_with_409_and_changes_nothing(api: ApiClient) -> None:
    assert api.post(URL, {"thread_id": "dup", "name": "one"}).status_code == 201
    response = api.post(URL, {"thread_id": "dup", "name": "two"})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert Thread.objects.get(thread_id="dup").name == "one"


def test_it_scopes_thread_ids_per_workspace(api: ApiClient, other_api: ApiClient) -> None:
    assert api.post(URL, {"thread_id": "same"}).status_code == 201
    assert other_api.post(URL, {"thread_id": "same"}).status_code == 201
    assert other_api.get(f"{URL}same/").json()["thread_id"] == "same"
    assert Thread.objects.filter(thread_id="same").count() == 2


def test_it_lists_only_the_requested_users_threads_and_everything_without_user_id(api: ApiClient) -> None:
    api.post(URL, {"thread_id": "a1", "user_id": "alice"})
    api.post(URL, {"thread_id": "b1", "user_id": "bob"})
    api.post(URL, {"thread_id": "n1"})
    assert ids(api.get(URL, {"user_id": "alice"})) == ["a1"]
    assert ids(api.get(URL, {"user_id": "bob"})) == ["b1"]
    assert ids(api.get(URL, {"user_id": "nobody"})) == []
    # No default user: without user_id every thread of the workspace; `user_id=` means "no user".
    assert sorted(ids(api.get(URL))) == ["a1", "b1", "n1"]
    assert ids(api.get(f"{URL}?user_id=")) == ["n1"]


def test_it_hides_another_users_thread_behind_404_when_user_id_is_given(api: ApiClient) -> None:
    api.post(URL, {"thread_id": "private", "user_id": "alice"})
    assert api.get(f"{URL}private/", {"user_id": "alice"}).status_code == 200
    for method in ("get", "delete"):
        response = getattr(api, method)(f"{URL}private/?user_id=mallory")
        assert response.status_code == 404, method
    patched = api.patch(f"{URL}private/?user_id=mallory", {"name": "pwned"})
    assert patched.status_code == 404
    appended = api.post(f"{URL}private/messages/?user_id=mallory", {"messages": [{"role": "user"}]})
    assert appended.status_code == 404
    assert api.get(f"{URL}private/messages/?user_id=mallory").status_code == 404
    assert Thread.objects.get(thread_id="private").name == "" and not Message.objects.exists()


def test_it_filters_by_tag_any_name_and_dates(api: ApiClient) -> None:
    for day, (thread_id, name, tags) in enumerate(
        [("t1", "Trip to Paris", ["travel"]), ("t2", "Budget", ["money", "q1"]), ("t3", "PARIS notes", [])]
    ):
        with time_machine.travel(T0 + timedelta(days=day), tick=False):
            api.post(URL, {"thread_id": thread_id, "name": name, "tags": tags})
    assert sorted(ids(api.get(f"{URL}?tag=travel&tag=q1"))) == ["t1", "t2"]
    assert ids(api.get(URL, {"tag": "money"})) == ["t2"]
    assert sorted(ids(api.get(URL, {"q": "paris"}))) == ["t1", "t3"]
    assert ids(api.get(URL, {"created_after": "2026-03-02T00:00:00Z"})) == ["t3", "t2"]
    assert ids(api.get(URL, {"created_before": "2026-03-02T00:00:00Z"})) == ["t1"]
    with time_machine.travel(T0 + timedelta(days=5), tick=False):
        api.patch(f"{URL}t1/", {"name": "Trip to Paris (done)"})
    assert ids(api.get(URL, {"updated_after": "2026-03-04T00:00:00Z"})) == ["t1"]
    assert ids(api.get(URL, {"updated_before": "2026-03-04T00:00:00Z"})) == ["t3", "t2"]


def test_it_orders_by_each_allowed_field_and_pages_by_keyset_without_gaps(api: ApiClient) -> None:
    # Equal timestamps on purpose: the id breaks ties in the page order and in the cursor.
    with time_machine.travel(T0, tick=False):
        for n in range(5):
            api.post(URL, {"thread_id": f"t{n}"})
    with time_machine.travel(T0 + timedelta(hours=1), tick=False):
        api.patch(f"{URL}t1/", {"name": "touched"})
    assert ids(api.get(URL)) == ["t1", "t4", "t3", "t2", "t0"]
    assert ids(api.get(URL, {"ordering": "updated_at"})) == ["t0", "t2", "t3", "t4", "t1"]
    assert ids(api.get(URL, {"ordering": "created_at"})) == ["t0", "t1", "t2", "t3", "t4"]
    assert ids(api.get(URL, {"ordering": "-created_at"})) == ["t4", "t3", "t2", "t1", "t0"]
    for ordering in ("-updated_at", "updated_at", "created_at", "-created_at"):
        seen: list[str] = []
        page = api.get(URL, {"ordering": ordering, "limit": 2}).json()
        while True:
            seen += [t["thread_id"] for t in page["results"]]
            if not page["next"]:
                break
            page = api.get(page["next"]).json()
        assert seen == ids(api.get(URL, {"ordering": ordering})), ordering
        back = api.get(page["previous"]).json()
        assert [t["thread_id"] for t in back["results"]] == seen[-3:-1]


def test_it_pins_the_query_count_of_the_list(api: ApiClient, django_assert_num_queries: Any) -> None:
    for n in range(3):
        api.post(URL, {"thread_id": f"t{n}", "tags": ["x"]})
    make_checkpoint(api.workspace, "t0")
    api.post(f"{URL}t0/fork/", {"thread_id": "fork"})
    api.get(URL)  # warm the key (remembered, last_used_at written)
    with django_assert_num_queries(1):  # one query for the page (fork sources joined); the key is remembered
        response = api.get(URL, {"tag": "x", "limit": "10"})
    assert len(response.json()["results"]) == 4  # the fork inherits its source's tags
    listed = api.get(URL).json()["results"]
    assert {t["thread_id"]: t["forked_from"] for t in listed}["fork"]["thread_id"] == "t0"
    assert set(ThreadSerializer().fields) == set(listed[0])


def test_it_shows_stats_on_the_detail_in_one_query(api: ApiClient, django_assert_num_queries: Any) -> None:
    workspace = api.workspace
    first = make_checkpoint(workspace, "t1", state={"a": 1})
    head = make_checkpoint(workspace, "t1", state={"a": 2})
    make_checkpoint(workspace, "t1", namespace="sub", state={"sub": True})
    make_pending_write(head, {"v": "é"})
    messages_append(workspace=workspace, thread_id="t1", messages=[{"role": "user", "content": "hi"}] * 3)
    api.get(f"{URL}t1/")
    with django_assert_num_queries(1):  # the thread with every stat as a subquery (the key is remembered)
        body = api.get(f"{URL}t1/").json()
    storage = api.get(f"{URL}t1/storage/").json()
    assert body["message_count"] == 3
    assert body["checkpoint_count"] == 3
    assert body["head"] == head.checkpoint_id != first.checkpoint_id
    assert body["storage_bytes"] == storage["totals"]["bytes"] > 0
    assert storage["totals"]["writes_bytes"] == len('{"v":"é"}'.encode())


def test_it_patches_fields_strictly_and_restarts_the_idle_expiry(api: ApiClient) -> None:
    with time_machine.travel(T0, tick=False):
        api.post(URL, {"thread_id": "t1", "metadata": {"old": True}})
    with time_machine.travel(T0 + timedelta(minutes=5), tick=False):
        response = api.patch(
            f"{URL}t1/",
            {
                "name": "Renamed",
                "user_id": "carol",
                "tags": ["a"],
                "metadata": {"new": 1},
                "scope": {"graph_nodes": ["planner"]},
                "ttl_seconds": 60,
                "pinned": True,
            },
        )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["metadata"] == {"new": 1}  # replaced whole
    assert body["scope"] == {"graph_nodes": ["planner"], "tags": []}
    assert body["expires_at"] == "2026-03-01T12:06:00.000000Z"
    assert body["updated_at"] == "2026-03-01T12:05:00.000000Z"
    assert (body["name"], body["user_id"], body["tags"], body["pinned"]) == ("Renamed", "carol", ["a"], True)
    cleared = api.patch(f"{URL}t1/", {"ttl_seconds": None}).json()
    assert cleared["ttl_seconds"] is None and cleared["expires_at"] is None
    event = AuditEvent.objects.filter(action="thread.update").first()
    assert event is not None and "pinned" in event.details["fields"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"thread_id": "x"}, "thread_id"),
        ({"created_at": "2026-01-01T00:00:00Z"}, "created_at"),
        ({"message_count": 3}, "message_count"),
        ({"surprise": 1}, "surprise"),
        ({"name": 5}, "name"),
        ({"tags": "a"}, "tags"),
        ({"tags": ["a", 1]}, "tags"),
        ({"metadata": []}, "metadata"),
        ({"metadata": {"k": "nul\u0000"}}, "metadata"),
        ({"metadata": {"nul\u0000key": 1}}, "metadata"),
        ({"scope": {"graph_nodes": "a"}}, "scope"),
        ({"scope": {"other": []}}, "scope"),
        ({"scope": None}, "scope"),
        ({"ttl_seconds": 0}, "ttl_seconds"),
        ({"ttl_seconds": "60"}, "ttl_seconds"),
        ({"pinned": "true"}, "pinned"),
        ({"name": "x" * 256}, "name"),
        ({"user_id": "nul\u0000"}, "user_id"),
    ],
)
def test_it_refuses_bad_patch_input_with_400_naming_the_field(
    api: ApiClient, body: dict[str, Any], field: str
) -> None:
    api.post(URL, {"thread_id": "t1", "name": "kept"})
    response = api.patch(f"{URL}t1/", body)
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["code"] == "validation_error"
    assert field in response.json()["error"]["details"]["fields"]
    assert Thread.objects.get(thread_id="t1").name == "kept"


@pytest.mark.parametrize(
    "body",
    [
        {"thread_id": "has space"},
        {"thread_id": "x" * 129},
        {"thread_id": 7},
        {"thread_id": "ok", "unknown": True},
        {"thread_id": "ok", "updated_at": "2026-01-01T00:00:00Z"},
        [],
        "text",
    ],
)
def test_it_refuses_bad_create_input(api: ApiClient, body: Any) -> None:
    response = api.post(URL, body)
    assert response.status_code == 400, response.json()
    assert not Thread.objects.exists()


def test_it_refuses_an_empty_patch(api: ApiClient) -> None:
    api.post(URL, {"thread_id": "t1"})
    assert api.patch(f"{URL}t1/", {}).status_code == 400


@pytest.mark.parametrize(
    "query",
    [
        {"ordering": "name"},
        {"limit": "0"},
        {"limit": "-1"},
        {"limit": "501"},
        {"limit": "ten"},
        {"created_after": "yesterday"},
        {"cursor": "garbage"},
        {"q": "x" * 300},
    ],
)
def test_it_refuses_bad_list_parameters_with_400(api: ApiClient, query: dict[str, str]) -> None:
    response = api.get(URL, query)
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["code"] == "validation_error"


def test_it_answers_404_for_other_workspaces_and_missing_threads(
    api: ApiClient, other_api: ApiClient
) -> None:
    api.post(URL, {"thread_id": "mine"})
    for path in ("mine/", "mine/storage/", "mine/messages/", "missing/"):
        response = other_api.get(f"{URL}{path}")
        assert response.status_code == 404, path
        assert response.json()["error"]["code"] == "not_found"
    assert other_api.patch(f"{URL}mine/", {"name": "x"}).status_code == 404
    assert other_api.delete(f"{URL}mine/").status_code == 404
    for verb, body in (("fork", {}), ("copy", {"thread_id": "c"}), ("prune", {"strategy": "delete"})):
        assert other_api.post(f"{URL}mine/{verb}/", body).status_code == 404, verb
    assert ids(other_api.get(URL)) == []
    assert Thread.objects.filter(thread_id="mine").exists()


def test_it_needs_write_scope_to_change_threads(read_api: ApiClient) -> None:
    assert read_api.post(URL, {}).status_code == 403
    assert read_api.get(URL).status_code == 200


def test_it_deletes_the_thread_and_everything_under_it_with_an_audit_event(api: ApiClient) -> None:
    workspace = api.workspace
    head = make_checkpoint(workspace, "doomed")
    make_pending_write(head, task_id="t")
    messages_append(workspace=workspace, thread_id="doomed", messages=[{"role": "user", "content": "secret"}])
    thread = Thread.objects.get(thread_id="doomed")
    medallion = Medallion.objects.create(
        workspace=workspace, scope_key="k", high_level="summary", source_thread=thread
    )
    api.post(f"{URL}doomed/fork/", {"thread_id": "child"})
    keep = make_checkpoint(workspace, "bystander")

    response = api.delete(f"{URL}doomed/")
    assert response.status_code == 204
    assert not Thread.objects.filter(thread_id="doomed").exists()
    assert not Checkpoint.objects.filter(thread_id=thread.pk).exists()
    assert not PendingWrite.objects.filter(thread_id=thread.pk).exists()
    assert not Message.objects.filter(thread_id=thread.pk).exists()
    medallion.refresh_from_db()
    assert medallion.source_thread is None
    child = api.get(f"{URL}child/").json()
    assert child["forked_from"] == {"thread_id": None, "checkpoint_id": head.checkpoint_id, "namespace": ""}
    assert Checkpoint.objects.filter(pk=keep.pk).exists()
    event = AuditEvent.objects.get(action="thread.delete")
    assert event.target_id == "doomed"
    assert event.details == {"checkpoints": 1, "pending_writes": 1, "messages": 1}
    assert "secret" not in str(event.details)
    assert api.get(f"{URL}doomed/").status_code == 404
    assert api.delete(f"{URL}doomed/").status_code == 404
