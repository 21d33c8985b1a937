"""LangGraph pending writes over the API: written before the checkpoint exists, insert-or-ignore for ordinary
writes, replace for special (negative idx) ones, LangGraph's order, gone with their checkpoint."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoints.exceptions import ValidationFailed
from checkpoints.models import PendingWrite, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoint_reads import checkpoint_get
from checkpoints.services.checkpoints import checkpoint_expire, pending_writes_put
from tests.api.errors import assert_not_found
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

# Outside a transaction: on PostgreSQL the writes take their one-round-trip path (services.checkpoints).
pytestmark = pytest.mark.django_db(transaction=True)

WRITES = "/api/v1/threads/t1/checkpoints/c1/writes/"


def _put(api: ApiClient, task_id: str, writes: list[dict[str, Any]], url: str = WRITES, **extra: Any) -> Any:
    return api.post(url, {"task_id": task_id, "writes": writes, **extra})


def _listed(api: ApiClient, url: str = WRITES) -> list[tuple[str, str, int, str, Any]]:
    response = api.get(url)
    assert response.status_code == 200, response.content
    return [
        (w["task_path"], w["task_id"], w["idx"], w["channel"], w["value"]) for w in response.json()["results"]
    ]


def test_it_stores_writes_before_the_checkpoint_exists(api: ApiClient, workspace: Workspace) -> None:
    response = _put(
        api,
        "task-a",
        [{"channel": "messages", "value": {"m": 1}, "type": "json"}, {"channel": "x", "value": None}],
    )
    assert response.status_code == 201
    assert [(w["idx"], w["channel"], w["value"], w["type"]) for w in response.json()["results"]] == [
        (0, "messages", {"m": 1}, "json"),
        (1, "x", None, ""),
    ]
    assert Thread.objects.filter(workspace=workspace, thread_id="t1").exists()
    make_checkpoint(workspace, "t1", checkpoint_id="c1")
    assert _listed(api) == [("", "task-a", 0, "messages", {"m": 1}), ("", "task-a", 1, "x", None)]


def test_it_stores_every_character_a_value_or_channel_may_hold_exactly(api: ApiClient) -> None:
    value = {"nul": "a\x00b", "quote": 'say "hi"', "backslash": "C:\\x\\u0000", "emoji": "😀", "tab": "\t\n"}
    channel = 'ch "q" \\ é'
    _put(api, "prime", [{"channel": "x", "value": 0}])  # the thread exists: the writes' one-round-trip path
    response = _put(api, "task", [{"channel": channel, "value": value, "type": 'ty"pe'}])
    assert response.status_code == 201, response.json()
    assert [(w["channel"], w["value"], w["type"]) for w in response.json()["results"]] == [
        (channel, value, 'ty"pe')
    ]
    assert ("", "task", 0, channel, value) in _listed(api)


def test_it_keeps_the_first_ordinary_write_and_replaces_special_ones(api: ApiClient) -> None:
    _put(
        api,
        "t",
        [{"channel": "a", "value": "first", "idx": 0}, {"channel": "__error__", "value": "e1", "idx": -1}],
    )
    again = _put(
        api,
        "t",
        [{"channel": "a", "value": "retry", "idx": 0}, {"channel": "__error__", "value": "e2", "idx": -1}],
    )
    assert again.status_code == 201
    assert [(w["idx"], w["value"]) for w in again.json()["results"]] == [(-1, "e2"), (0, "first")]
    assert PendingWrite.objects.count() == 2


def test_it_settles_duplicates_within_one_call_like_langgraph(api: ApiClient) -> None:
    response = _put(
        api,
        "t",
        [
            {"channel": "a", "value": 1, "idx": 3},
            {"channel": "a", "value": 2, "idx": 3},
            {"channel": "__interrupt__", "value": "i1", "idx": -3},
            {"channel": "__interrupt__", "value": "i2", "idx": -3},
        ],
    )
    assert response.status_code == 201
    assert [(w["idx"], w["value"]) for w in response.json()["results"]] == [(-3, "i2"), (3, 1)]


def test_it_lists_in_task_path_task_id_idx_order(api: ApiClient) -> None:
    _put(api, "task-b", [{"channel": "c", "value": 1}, {"channel": "c", "value": 2}], task_path="~2")
    _put(api, "task-a", [{"channel": "c", "value": 3}], task_path="~2")
    _put(
        api,
        "task-z",
        [{"channel": "c", "value": 4, "idx": 5}, {"channel": "e", "value": 5, "idx": -1}],
        task_path="~1",
    )
    assert [(p, t, i) for p, t, i, _, _ in _listed(api)] == [
        ("~1", "task-z", -1),
        ("~1", "task-z", 5),
        ("~2", "task-a", 0),
        ("~2", "task-b", 0),
        ("~2", "task-b", 1),
    ]


def test_it_answers_a_post_with_what_is_stored_for_that_task_only(api: ApiClient) -> None:
    _put(api, "other", [{"channel": "c", "value": 1}])
    response = _put(api, "mine", [{"channel": "c", "value": 2}])
    assert [w["task_id"] for w in response.json()["results"]] == ["mine"]


def test_it_keeps_namespaces_apart(api: ApiClient) -> None:
    _put(api, "t", [{"channel": "root", "value": 1}])
    _put(api, "t", [{"channel": "sub", "value": 2}], url=f"{WRITES}?namespace=sub")
    assert [c for _, _, _, c, _ in _listed(api)] == ["root"]
    assert [c for _, _, _, c, _ in _listed(api, f"{WRITES}?namespace=sub")] == ["sub"]


def test_it_answers_410_for_the_writes_of_an_expired_checkpoint(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="c1")
    _put(api, "t", [{"channel": "c", "value": 1}])
    checkpoint_expire(
        checkpoint=checkpoint_get(workspace=workspace, thread_id="t1", checkpoint_id="c1"),
        actor=Actor.system(),
    )
    assert not PendingWrite.objects.exists()
    for response in (api.get(WRITES), _put(api, "t", [{"channel": "c", "value": 2}])):
        assert response.status_code == 410
        assert response.json()["error"]["code"] == "gone"
    assert not PendingWrite.objects.exists()


def test_it_answers_404_for_the_writes_of_an_unknown_thread(api: ApiClient) -> None:
    assert_not_found(api.get("/api/v1/threads/nope/checkpoints/c1/writes/"), "Thread 'nope' not found.")


def test_it_lists_no_writes_for_a_checkpoint_without_any(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="c1")
    assert api.get(WRITES).json() == {"results": [], "next": None, "previous": None}


def test_the_service_refuses_a_task_without_writes(workspace: Workspace) -> None:
    with pytest.raises(ValidationFailed):
        pending_writes_put(
            workspace=workspace,
            thread_id="t1",
            namespace="",
            checkpoint_id="c1",
            task_id="task",
            task_path="",
            writes=[],
        )
    assert not Thread.objects.exists()


def test_another_workspaces_writes_under_the_same_ids_land_in_its_own_thread(
    api: ApiClient, other_api: ApiClient, workspace: Workspace
) -> None:
    _put(api, "task", [{"channel": "a", "value": "acme's"}])
    response = _put(other_api, "task", [{"channel": "a", "value": "theirs"}])
    assert response.status_code == 201, response.json()
    assert [w["value"] for w in response.json()["results"]] == ["theirs"]
    assert _listed(api) == [("", "task", 0, "a", "acme's")]
    assert _listed(other_api) == [("", "task", 0, "a", "theirs")]
    assert Thread.objects.filter(thread_id="t1").count() == 2
    assert PendingWrite.objects.filter(thread__workspace=workspace).count() == 1


def test_writes_into_another_users_thread_are_404_and_store_nothing(api: ApiClient) -> None:
    assert _put(api, "task", [{"channel": "a", "value": 1}], url=f"{WRITES}?user_id=alice").status_code == 201
    response = _put(api, "task", [{"channel": "a", "value": 2}], url=f"{WRITES}?user_id=bob")
    assert_not_found(response, "Thread 't1' not found.")
    assert [w.value for w in PendingWrite.objects.all()] == ["1"]
    assert Thread.objects.get(thread_id="t1").user_id == "alice"
