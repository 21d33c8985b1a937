"""The server endpoints behind the LangGraph saver (checkpoints.api.views.langgraph): saves that inherit
unchanged channels from the parent, tuples with their pending writes, delete-for-runs — including hostile
input, other workspaces, and pinned query counts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from checkpoints.integrity import format_timestamp, record_checksum
from checkpoints.models import AuditEvent, Checkpoint, PendingWrite
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

SAVE = "/api/v1/langgraph/threads/{thread}/checkpoints/"
TUPLES = "/api/v1/langgraph/checkpoints/"
RUNS = "/api/v1/langgraph/runs/delete/"


def lg_state(values: dict[str, Any], versions: dict[str, Any]) -> dict[str, Any]:
    return {
        "v": 4,
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": versions,
        "versions_seen": {},
        "updated_channels": None,
    }


def body(
    thread: str,
    checkpoint_id: str,
    state: dict[str, Any],
    *,
    parent: str | None = None,
    run_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    hash_state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A save body with the checksum of `hash_state` (the whole state the client holds; default `state`)."""
    sent = {
        "checkpoint_id": checkpoint_id,
        "parent_id": parent,
        "agent_id": "langgraph",
        "framework": "langgraph",
        "schema_version": "langgraph.v4",
        "step_index": 0,
        "step_name": "loop",
        "run_id": run_id,
        "state": state,
        "context": {},
        "metadata": metadata or {},
        "created_at": format_timestamp(datetime.now(UTC)),
    }
    return {**sent, "checksum": checksum_of(sent, thread, "", hash_state or state)}


def checksum_of(sent: dict[str, Any], thread: str, namespace: str, state: dict[str, Any]) -> str:
    record = {**sent, "thread_id": thread, "namespace": namespace, "state": state}
    return record_checksum({**record, "handoff_target": None, "handoff_from": None})


def save(api: ApiClient, thread: str, payload: dict[str, Any]) -> Any:
    return api.post(SAVE.format(thread=thread), payload)


def test_it_stores_whole_checkpoints_from_changed_channels_only(api: ApiClient) -> None:
    first = save(api, "t", body("t", "c1", lg_state({"doc": "big", "n": 1}, {"doc": "1", "n": "1"})))
    assert first.status_code == 201, first.json()
    whole = lg_state({"doc": "big", "n": 2}, {"doc": "1", "n": "2"})
    payload = body("t", "c2", lg_state({"n": 2}, {"doc": "1", "n": "2"}), parent="c1", hash_state=whole)
    response = save(api, "t", {**payload, "inherit": {"checkpoint_id": "c1", "channels": {"doc": "1"}}})
    assert response.status_code == 201, response.json()
    stored = Checkpoint.objects.get(checkpoint_id="c2")
    assert stored.decoded("state") == whole and stored.parent_checkpoint_id == "c1"
    assert response.json()["checksum"] == payload["checksum"]
    # An identical retry (the answer was lost) finds it.
    again = save(api, "t", {**payload, "inherit": {"checkpoint_id": "c1", "channels": {"doc": "1"}}})
    assert again.status_code == 200


@pytest.mark.parametrize(
    ("inherit", "problem"),
    [
        ({"checkpoint_id": "missing", "channels": {"doc": "1"}}, ["doc"]),
        ({"checkpoint_id": "c1", "channels": {"doc": "2"}}, ["doc"]),  # another version
        ({"checkpoint_id": "c1", "channels": {"ghost": "1"}}, ["ghost"]),
    ],
)
def test_it_asks_for_every_value_when_the_base_does_not_hold_them(
    api: ApiClient, inherit: dict[str, Any], problem: list[str]
) -> None:
    save(api, "t", body("t", "c1", lg_state({"doc": "big"}, {"doc": "1"})))
    whole = lg_state({"doc": "big", "ghost": 1}, {"doc": "2", "ghost": "1"})
    payload = body("t", "c2", lg_state({}, whole["channel_versions"]), parent="c1", hash_state=whole)
    response = save(api, "t", {**payload, "inherit": inherit})
    assert response.status_code == 412, response.json()
    assert response.json()["error"]["details"]["inherit"]["missing_channels"] == problem
    assert not Checkpoint.objects.filter(checkpoint_id="c2").exists()


def test_it_asks_for_every_value_when_the_base_expired_or_is_elsewhere(
    api: ApiClient, other_api: ApiClient
) -> None:
    save(api, "t", body("t", "c1", lg_state({"doc": "big"}, {"doc": "1"})))
    save(other_api, "t", body("t", "o1", lg_state({"doc": "other"}, {"doc": "1"})))
    whole = lg_state({"doc": "big"}, {"doc": "1"})
    inherit = {"inherit": {"checkpoint_id": "o1", "channels": {"doc": "1"}}}
    stranger = save(api, "t", {**body("t", "c2", lg_state({}, {"doc": "1"}), hash_state=whole), **inherit})
    assert stranger.status_code == 412  # another workspace's checkpoint is no base
    api.delete("/api/v1/threads/t/checkpoints/c1/")
    inherit = {"inherit": {"checkpoint_id": "c1", "channels": {"doc": "1"}}}
    gone = save(
        api, "t", {**body("t", "c2", lg_state({}, {"doc": "1"}), parent="c1", hash_state=whole), **inherit}
    )
    assert gone.status_code == 412


def test_it_refuses_a_composed_state_that_does_not_hash_to_the_checksum(api: ApiClient) -> None:
    save(api, "t", body("t", "c1", lg_state({"doc": "stored"}, {"doc": "1"})))
    believed = lg_state({"doc": "what the client thinks"}, {"doc": "1"})
    payload = body("t", "c2", lg_state({}, {"doc": "1"}), parent="c1", hash_state=believed)
    response = save(api, "t", {**payload, "inherit": {"checkpoint_id": "c1", "channels": {"doc": "1"}}})
    assert response.status_code == 412
    assert response.json()["error"]["details"]["inherit"]["checksum"] == "mismatch"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"inherit": {"checkpoint_id": "c1", "channels": {"n": "1"}}}, "inherit"),  # sent and inherited
        ({"inherit": {"checkpoint_id": "c1", "channels": ["n"]}}, "inherit"),
        ({"inherit": {"checkpoint_id": "c1", "channels": {"n": True}}}, "inherit"),
        ({"inherit": {"checkpoint_id": "bad id!", "channels": {}}}, "inherit"),
        ({"inherit": {"checkpoint_id": "c1", "channels": {}, "extra": 1}}, "inherit"),
        ({"inherit": "c1"}, "inherit"),
        ({"framework": "custom"}, "framework"),
        ({"surprise": 1}, "surprise"),
        ({"state": None}, "state"),
        ({"metadata": {"x": "a\u0000b"}}, "metadata"),
        ({"checksum": "0" * 64}, "checksum"),
    ],
)
def test_it_refuses_bad_saves(api: ApiClient, change: dict[str, Any], field: str) -> None:
    save(api, "t", body("t", "c1", lg_state({"n": 1}, {"n": "1"})))
    response = save(api, "t", {**body("t", "c2", lg_state({"n": 2}, {"n": "1"}), parent="c1"), **change})
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["code"] == "validation_error"
    assert field in str(response.json()["error"])
    assert not Checkpoint.objects.filter(checkpoint_id="c2").exists()


def test_a_read_key_cannot_save_or_delete(read_api: ApiClient) -> None:
    assert save(read_api, "t", body("t", "c1", lg_state({}, {}))).status_code == 403
    assert read_api.post(RUNS, {"run_ids": ["r"]}).status_code == 403
    assert read_api.get(TUPLES).status_code == 200


def _seed(api: ApiClient) -> None:
    seeds = [("a", "c1", "", "r1"), ("a", "c2", "", "r2"), ("a", "c3", "sub:1", "r2"), ("b", "c4", "", "r1")]
    for thread, cid, ns, run in seeds:
        payload = body(thread, cid, lg_state({"k": cid}, {"k": "1"}), run_id=run, metadata={"source": cid})
        payload = {key: value for key, value in payload.items() if key != "checksum"}
        payload = {**payload, "namespace": ns, "checksum": checksum_of(payload, thread, ns, payload["state"])}
        assert save(api, thread, payload).status_code == 201
        writes = {"task_id": "t1", "writes": [{"channel": "ch", "value": cid, "idx": 0}]}
        api.post(f"/api/v1/threads/{thread}/checkpoints/{cid}/writes/?namespace={ns}", writes)
    # A checkpoint of another framework in the same thread is not LangGraph's.
    api.post("/api/v1/threads/a/checkpoints/", {"checkpoint_id": "c9", "agent_id": "x", "state": {}})


def test_it_lists_tuples_in_langgraph_order_with_their_writes(api: ApiClient, other_api: ApiClient) -> None:
    _seed(api)
    _seed(other_api)
    rows = api.get(TUPLES).json()["results"]
    assert [r["checkpoint_id"] for r in rows] == ["c4", "c3", "c2", "c1"]
    assert [w["value"] for w in rows[0]["pending_writes"]] == ["c4"]
    assert rows[0]["state"]["channel_values"] == {"k": "c4"}
    assert record_checksum(rows[0]) == rows[0]["checksum"]

    def ids(query: str) -> list[str]:
        response = api.get(f"{TUPLES}?{query}")
        assert response.status_code == 200, response.json()
        return [r["checkpoint_id"] for r in response.json()["results"]]

    assert ids("thread_id=a") == ["c3", "c2", "c1"]
    assert ids("thread_id=a&namespace=") == ["c2", "c1"]
    assert ids("thread_id=a&namespace=sub:1") == ["c3"]
    assert ids("thread_id=a&checkpoint_id=c2") == ["c2"]
    assert ids("thread_id=a&before=c2") == ["c1"]
    assert ids("before=c0") == []  # compared as ids, whether or not the anchor exists
    assert ids('metadata={"source":"c2"}') == ["c2"]
    assert ids("run_id=r1") == ["c4", "c1"]
    assert ids("thread_id=missing") == []
    first = api.get(f"{TUPLES}?limit=3").json()
    assert len(first["results"]) == 3 and first["next"]
    assert [r["checkpoint_id"] for r in api.get(first["next"]).json()["results"]] == ["c1"]


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=x", "metadata=[1]", "metadata={", "cursor=nonsense", "namespace=" + "x" * 300]
)
def test_it_refuses_bad_list_parameters(api: ApiClient, query: str) -> None:
    response = api.get(f"{TUPLES}?{query}")
    assert response.status_code == 400 and response.json()["error"]["code"] == "validation_error"


def test_the_tuple_list_costs_the_same_few_queries_for_any_page(
    api: ApiClient, django_assert_num_queries: Any
) -> None:
    _seed(api)
    api.get(TUPLES)  # warm up the key's last-used update
    with django_assert_num_queries(2):  # checkpoints (with their threads), pending writes
        assert len(api.get(TUPLES).json()["results"]) == 4
    for n in range(10):
        payload = body("a", f"d{n}", lg_state({"k": n}, {"k": "1"}))
        assert save(api, "a", payload).status_code == 201
    with django_assert_num_queries(2):
        assert len(api.get(TUPLES).json()["results"]) == 14


def test_it_deletes_runs_as_tombstones_with_an_audit_event(api: ApiClient, other_api: ApiClient) -> None:
    _seed(api)
    _seed(other_api)
    response = api.post(RUNS, {"run_ids": ["r2", "never-ran"]})
    assert response.status_code == 200 and response.json() == {"deleted": 2}
    mine = Checkpoint.objects.filter(workspace=api.workspace)
    assert set(mine.filter(expired_at__isnull=False).values_list("checkpoint_id", flat=True)) == {"c2", "c3"}
    assert mine.get(checkpoint_id="c2").state is None
    assert not PendingWrite.objects.filter(
        thread__workspace=api.workspace, checkpoint_id__in=["c2", "c3"]
    ).exists()
    assert Checkpoint.objects.filter(workspace=other_api.workspace, expired_at__isnull=False).count() == 0
    event = AuditEvent.objects.get(action="checkpoint.delete_for_runs")
    assert event.details["tombstoned"] == 2 and event.details["threads"] == ["a"]
    assert api.post(RUNS, {"run_ids": ["r2"]}).json() == {"deleted": 0}  # idempotent


def test_it_deletes_nothing_when_a_runs_checkpoint_is_pinned(api: ApiClient) -> None:
    _seed(api)
    api.post("/api/v1/threads/a/checkpoints/c2/ttl/?namespace=", {"pinned": True})
    response = api.post(RUNS, {"run_ids": ["r2"]})
    assert response.status_code == 409
    assert response.json()["error"]["details"]["pinned"] == [{"thread_id": "a", "checkpoint_id": "c2"}]
    assert not Checkpoint.objects.filter(expired_at__isnull=False).exists()


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"run_ids": []},
        {"run_ids": "r1"},
        {"run_ids": [1]},
        {"run_ids": [""]},
        {"run_ids": ["a\u0000"]},
        {"run_ids": ["r"] * 1001},
        {"run_ids": ["r"], "extra": 1},
    ],
)
def test_it_refuses_bad_run_deletions(api: ApiClient, payload: dict[str, Any]) -> None:
    response = api.post(RUNS, payload)
    assert response.status_code == 400 and response.json()["error"]["code"] == "validation_error"
