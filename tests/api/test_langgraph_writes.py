"""Several tasks' pending writes in one request (`POST langgraph/threads/{t}/writes/`): each task stored as
the writes endpoint stores it, in order; every value checked before anything is stored; a refusal stops at
its task; one round trip on PostgreSQL (docs/integrations/langgraph.md)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from checkpoints.api.serializers.langgraph import MAX_WRITE_TASKS
from checkpoints.models import PendingWrite, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_expire
from tests.api.errors import assert_not_found
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

# Outside a transaction: on PostgreSQL the batch takes its one-round-trip path.
pytestmark = pytest.mark.django_db(transaction=True)

BATCH = "/api/v1/langgraph/threads/t1/writes/"
READ_ONLY = ["This field is read-only."]


def task(checkpoint_id: str, task_id: str, *writes: tuple[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "checkpoint_id": checkpoint_id,
        "task_id": task_id,
        "writes": [{"channel": channel, "value": value} for channel, value in writes],
        **extra,
    }


def stored(thread_id: str = "t1") -> list[tuple[str, str, str, str, int, str, Any]]:
    rows = PendingWrite.objects.filter(thread__thread_id=thread_id).order_by(
        "namespace", "checkpoint_id", "task_id", "idx"
    )
    return [(w.namespace, w.checkpoint_id, w.task_id, w.task_path, w.idx, w.channel, w.value) for w in rows]


def test_every_task_is_stored_at_its_checkpoint_and_namespace(api: ApiClient, workspace: Workspace) -> None:
    response = api.post(
        BATCH,
        {
            "tasks": [
                task("c1", "a", ("messages", {"m": 1}), ("x", None)),
                task("c2", "b", ("out", 'é\x00"\\'), namespace="sub:1", task_path="p"),
            ]
        },
    )

    assert response.status_code == 201, response.json()
    assert response.json() == {"tasks": 2}
    assert Thread.objects.filter(workspace=workspace, thread_id="t1").exists()  # created, as by one task
    assert stored() == [
        ("", "c1", "a", "", 0, "messages", '{"m":1}'),
        ("", "c1", "a", "", 1, "x", "null"),
        ("sub:1", "c2", "b", "p", 0, "out", '"é\\u0000\\"\\\\"'),
    ]
    # Read back through the writes endpoint of each checkpoint, as LangGraph lists them.
    listed = api.get("/api/v1/threads/t1/checkpoints/c2/writes/?namespace=sub:1").json()["results"]
    assert [(w["task_id"], w["channel"], w["value"]) for w in listed] == [("b", "out", 'é\x00"\\')]


def test_a_batch_stores_what_its_tasks_stored_one_by_one_would(api: ApiClient) -> None:
    first = {"checkpoint_id": "c1", "task_id": "a", "writes": [{"channel": "x", "value": 1, "idx": 0}]}
    special = {"checkpoint_id": "c1", "task_id": "a", "writes": [{"channel": "err", "value": 1, "idx": -1}]}
    again = {
        "checkpoint_id": "c1",
        "task_id": "a",
        "writes": [{"channel": "x", "value": 2, "idx": 0}, {"channel": "err", "value": 2, "idx": -1}],
    }
    assert api.post(BATCH, {"tasks": [first, special, again]}).status_code == 201
    # An ordinary write is kept as first written; a special one (negative idx) replaced by the last.
    assert stored() == [("", "c1", "a", "", -1, "err", "2"), ("", "c1", "a", "", 0, "x", "1")]

    assert api.post(BATCH, {"tasks": [first, special, again]}).status_code == 201  # sent again: the same
    assert stored() == [("", "c1", "a", "", -1, "err", "2"), ("", "c1", "a", "", 0, "x", "1")]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"tasks": []}, {"tasks": {"non_field_errors": ["This list may not be empty."]}}),
        ({"tasks": {"checkpoint_id": "c1"}}, None),
        ({"tasks": [task("c1", "a", ("x", 1), extra=1)]}, {"tasks": {"0": {"extra": ["Unknown field."]}}}),
        ({"tasks": [task("c 1", "a", ("x", 1))]}, None),
        ({"tasks": [task("c1", "a\x00", ("x", 1))]}, None),
        ({"tasks": [task("c1", "a")]}, None),  # a task without writes
        ({"tasks": [task("c1", "a", ("x", 1), thread_id="t2")]}, {"tasks": {"0": {"thread_id": READ_ONLY}}}),
        ({"tasks": [task("c1", "a", ("x", 1))] * (MAX_WRITE_TASKS + 1)}, None),
        ({"writes": [{"channel": "x", "value": 1}]}, None),
    ],
)  # fmt: skip
def test_a_batch_the_api_refuses_is_a_400_and_stores_nothing(
    api: ApiClient, body: dict[str, Any], fields: dict[str, Any] | None
) -> None:
    response = api.post(BATCH, body)
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    if fields is not None:
        assert error["details"]["fields"] == fields
    assert not Thread.objects.filter(thread_id="t1").exists()
    assert not PendingWrite.objects.exists()


def test_a_value_too_deep_to_store_refuses_the_batch_before_any_task_is_stored(api: ApiClient) -> None:
    deep: Any = 1
    for _ in range(150):
        deep = [deep]
    response = api.post(BATCH, {"tasks": [task("c1", "a", ("x", 1)), task("c2", "b", ("y", deep))]})
    assert response.status_code == 400
    assert not PendingWrite.objects.exists()


def test_a_task_whose_checkpoint_expired_is_410_and_stops_the_batch_there(
    api: ApiClient, workspace: Workspace
) -> None:
    checkpoint_expire(checkpoint=make_checkpoint(workspace, "t1", checkpoint_id="gone"), actor=Actor.system())

    response = api.post(
        BATCH,
        {"tasks": [task("c1", "a", ("x", 1)), task("gone", "b", ("y", 2)), task("c3", "c", ("z", 3))]},
    )

    assert response.status_code == 410, response.json()
    assert response.json()["error"]["code"] == "gone"
    # The task before the refused one is stored, as separate requests would have left it; none after it.
    assert stored() == [("", "c1", "a", "", 0, "x", "1")]


def test_another_users_thread_is_404_and_nothing_is_stored(api: ApiClient) -> None:
    assert api.post(f"{BATCH}?user_id=alice", {"tasks": [task("c1", "a", ("x", 1))]}).status_code == 201

    response = api.post(
        f"{BATCH}?user_id=bob", {"tasks": [task("c1", "b", ("x", 2)), task("c2", "c", ("y", 3))]}
    )

    assert_not_found(response, "Thread 't1' not found.")
    assert stored() == [("", "c1", "a", "", 0, "x", "1")]


def test_another_workspace_with_the_same_ids_writes_its_own_thread(
    api: ApiClient, other_api: ApiClient, workspace: Workspace
) -> None:
    body = {"tasks": [task("c1", "a", ("x", 1))]}
    assert api.post(BATCH, body).status_code == 201
    assert other_api.post(BATCH, {"tasks": [task("c1", "a", ("x", 2))]}).status_code == 201

    threads = Thread.objects.filter(thread_id="t1")
    assert threads.count() == 2
    mine = threads.get(workspace=workspace)
    assert [w.value for w in PendingWrite.objects.filter(thread=mine)] == ["1"]
    assert [w["value"] for w in api.get("/api/v1/threads/t1/checkpoints/c1/writes/").json()["results"]] == [1]
    listed = other_api.get("/api/v1/threads/t1/checkpoints/c1/writes/").json()["results"]
    assert [w["value"] for w in listed] == [2]


@pytest.mark.postgres
def test_on_postgresql_a_batch_is_one_round_trip_the_threads_lock_then_one_statement(api: ApiClient) -> None:
    assert api.post(BATCH, {"tasks": [task("c0", "prime", ("x", 0))]}).status_code == 201
    seen: list[tuple[str, bool]] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        pipelined = bool(connection.connection.pgconn.pipeline_status)
        seen.append((" ".join(sql.split(" ")[:2]), pipelined))
        return execute(sql, params, many, context)

    body = {"tasks": [task(f"c{n}", f"task-{n}", ("x", n)) for n in range(1, 4)]}
    with connection.execute_wrapper(record):
        response = api.post(BATCH, body)

    assert response.status_code == 201
    assert seen == [("SELECT 1", True), ("WITH incoming", True)]
    assert [(w[1], w[2], w[6]) for w in stored()] == [("c0", "prime", "0")] + [
        (f"c{n}", f"task-{n}", str(n)) for n in range(1, 4)
    ]
