"""The store routes (docs/store.md): the Agent Protocol's bodies and answers, isolation, scopes, audit and
TTL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.utils import timezone

from checkpoints.models import ApiKey, AuditEvent, StoreItem, Workspace
from checkpoints.services.store import store_sweep_expired
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

ITEMS = "/api/v1/store/items"
SEARCH = "/api/v1/store/items/search"
NAMESPACES = "/api/v1/store/namespaces"
BATCH = "/api/v1/store/batch/"


def put(api: ApiClient, namespace: list[str], key: str, value: Any, **extra: Any) -> None:
    response = api.put(ITEMS, {"namespace": namespace, "key": key, "value": value, **extra}, format="json")
    assert response.status_code == 204, response.content
    assert response.content == b""


def get(api: ApiClient, namespace: list[str], key: str, **params: Any) -> Any:
    return api.get(ITEMS, {"namespace": ".".join(namespace), "key": key, **params})


def search(api: ApiClient, **body: Any) -> list[dict[str, Any]]:
    response = api.post(SEARCH, body, format="json")
    assert response.status_code == 200, response.content
    return list(response.json()["items"])


def keys(items: list[dict[str, Any]]) -> list[str]:
    return [item["key"] for item in items]


def test_put_then_get_answers_the_protocol_item(api: ApiClient) -> None:
    put(api, ["users", "alice"], "prefs", {"theme": "dark", "city": "Zürich"})
    response = get(api, ["users", "alice"], "prefs")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"namespace", "key", "value", "created_at", "updated_at"}
    assert body["namespace"] == ["users", "alice"]
    assert body["key"] == "prefs"
    assert body["value"] == {"theme": "dark", "city": "Zürich"}
    created = body["created_at"]
    put(api, ["users", "alice"], "prefs", {"theme": "light"})
    again = get(api, ["users", "alice"], "prefs").json()
    assert again["value"] == {"theme": "light"}
    assert again["created_at"] == created
    assert again["updated_at"] > created


def test_namespace_may_be_repeated_per_label(api: ApiClient) -> None:
    put(api, ["a", "b"], "k", {"x": 1})
    response = api.get(f"{ITEMS}?namespace=a&namespace=b&key=k")
    assert response.json()["value"] == {"x": 1}


def test_missing_item_is_404_in_the_envelope(api: ApiClient) -> None:
    response = get(api, ["nothing"], "here")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_delete_removes_the_item_and_is_idempotent(api: ApiClient) -> None:
    put(api, ["docs"], "a", {"t": 1})
    for _ in range(2):
        response = api.delete(ITEMS, {"namespace": ["docs"], "key": "a"}, format="json")
        assert response.status_code == 204
    assert get(api, ["docs"], "a").status_code == 404


def test_x_api_key_header_is_accepted(api: ApiClient) -> None:
    put(api, ["n"], "k", {"v": 1})
    plain = ApiClient()
    response = plain.get(ITEMS, {"namespace": "n", "key": "k"}, HTTP_X_API_KEY=api.secret)
    assert response.status_code == 200
    assert response.json()["value"] == {"v": 1}
    refused = plain.get(ITEMS, {"namespace": "n", "key": "k"}, HTTP_X_API_KEY="cairn_wrong")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "not_authenticated"


def test_another_workspace_sees_nothing(api: ApiClient, other_api: ApiClient) -> None:
    put(api, ["secret", "ns"], "k", {"v": 1})
    assert get(other_api, ["secret", "ns"], "k").status_code == 404
    assert search(other_api, namespace_prefix=["secret"]) == []
    listed = other_api.post(NAMESPACES, {}, format="json").json()
    assert listed == {"namespaces": []}
    # The other workspace's item of the same name is its own.
    put(other_api, ["secret", "ns"], "k", {"v": 2})
    assert get(api, ["secret", "ns"], "k").json()["value"] == {"v": 1}
    other_api.delete(ITEMS, {"namespace": ["secret", "ns"], "key": "k"}, format="json")
    assert get(api, ["secret", "ns"], "k").status_code == 200


def test_read_key_reads_but_may_not_write(
    api: ApiClient, make_client: Callable[..., ApiClient], workspace: Workspace
) -> None:
    put(api, ["n"], "k", {"v": 1})
    reader = make_client(workspace, ApiKey.Scope.READ)
    assert get(reader, ["n"], "k").status_code == 200
    assert search(reader, namespace_prefix=["n"])[0]["key"] == "k"
    refused = reader.put(ITEMS, {"namespace": ["n"], "key": "k", "value": {}}, format="json")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "permission_denied"
    assert reader.delete(ITEMS, {"namespace": ["n"], "key": "k"}, format="json").status_code == 403
    batch = reader.post(BATCH, {"ops": [{"op": "put", "namespace": ["n"], "key": "k", "value": None}]})
    assert batch.status_code == 403
    reads = reader.post(BATCH, {"ops": [{"op": "get", "namespace": ["n"], "key": "k"}]}, format="json")
    assert reads.json()["results"][0]["value"] == {"v": 1}


def test_item_writes_are_audited(api: ApiClient, workspace: Workspace) -> None:
    put(api, ["mem", "alice"], "fact", {"v": 1})
    api.delete(ITEMS, {"namespace": ["mem", "alice"], "key": "fact"}, format="json")
    api.delete(ITEMS, {"namespace": ["mem", "alice"], "key": "fact"}, format="json")  # nothing: no event
    events = list(AuditEvent.objects.filter(workspace=workspace, target_type="store_item").order_by("id"))
    assert [(e.action, e.target_id) for e in events] == [
        ("store.item.put", "mem.alice/fact"),
        ("store.item.delete", "mem.alice/fact"),
    ]
    assert events[0].details == {"namespace": ["mem", "alice"], "key": "fact"}
    assert events[0].actor_api_key_id == api.key.pk


@pytest.mark.parametrize(
    "body",
    [
        {"namespace": ["a"], "key": "k", "value": {"t": "nul\u0000"}},
        {"namespace": ["a"], "key": "k", "value": {"nul\u0000": 1}},
        {"namespace": ["a\u0000"], "key": "k", "value": {}},
        {"namespace": ["a.b"], "key": "k", "value": {}},
        {"namespace": [""], "key": "k", "value": {}},
        {"namespace": [], "key": "k", "value": {}},
        {"namespace": "a", "key": "k", "value": {}},
        {"namespace": [1], "key": "k", "value": {}},
        {"namespace": ["a"], "key": "", "value": {}},
        {"namespace": ["a"], "key": 5, "value": {}},
        {"namespace": ["a"], "key": "k", "value": [1, 2]},
        {"namespace": ["a"], "key": "k", "value": "text"},
        {"namespace": ["a"], "key": "k"},
        {"namespace": ["a"], "key": "k", "value": {}, "ttl": -1},
        {"namespace": ["a"], "key": "k", "value": {}, "ttl": "5"},
        {"namespace": ["a"], "key": "k", "value": {}, "index": "yes"},
        {"namespace": ["a"], "key": "k", "value": {}, "surprise": 1},
        {"namespace": ["a"], "key": "k" * 2000, "value": {}},
        {"namespace": ["x"] * 65, "key": "k", "value": {}},
    ],
)
def test_bad_put_is_a_400(api: ApiClient, body: dict[str, Any]) -> None:
    response = api.put(ITEMS, body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "validation_error"
    assert not StoreItem.objects.exists()


def test_deep_and_huge_bodies_are_refused(api: ApiClient, settings: Any) -> None:
    deep = '{"namespace": ["a"], "key": "k", "value": ' + '{"a": ' * 300 + "1" + "}" * 300 + "}"
    response = api.put(ITEMS, deep, content_type="application/json")
    assert response.status_code == 400
    assert "deeper" in response.json()["error"]["message"]
    settings.CAIRN_MAX_BODY_BYTES = 1000
    big = api.put(ITEMS, {"namespace": ["a"], "key": "k", "value": {"t": "x" * 2000}}, format="json")
    assert big.status_code == 413
    assert big.json()["error"]["code"] == "payload_too_large"


@pytest.mark.parametrize(
    "body",
    [
        {"filter": {"a": {"$regex": "x"}}},
        {"filter": {"a": {"$gt": True}}},
        {"filter": {"a": {"$gt": [1]}}},
        {"filter": {"a": "nul\u0000"}},
        {"filter": "a"},
        {"limit": 0},
        {"limit": "5"},
        {"offset": -1},
        {"namespace_prefix": ["a.b"]},
        {"query": 5},
        {"refresh_ttl": "yes"},
        {"query_vector": [False]},
        {"query_vector": []},
        {"query_vector": ["1"]},
    ],
)
def test_bad_search_is_a_400(api: ApiClient, body: dict[str, Any]) -> None:
    response = api.post(SEARCH, body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "validation_error"


def test_bad_get_and_namespaces_are_400s(api: ApiClient) -> None:
    assert api.get(ITEMS, {"namespace": "a"}).status_code == 400
    assert api.get(ITEMS, {"namespace": "a..b", "key": "k"}).status_code == 400
    assert api.get(ITEMS, {"key": "k"}).status_code == 400
    assert api.get(ITEMS, {"namespace": "a", "key": "nul\u0000"}).status_code == 400
    assert api.get(ITEMS, {"namespace": "a", "key": "k" * 1025}).status_code == 400
    assert api.get(ITEMS, {"namespace": "a\u0000b", "key": "k"}).status_code == 400
    assert api.get(ITEMS, {"namespace": "a", "key": "k", "refresh_ttl": "maybe"}).status_code == 400
    assert api.post(NAMESPACES, {"max_depth": 0}, format="json").status_code == 400
    assert api.post(NAMESPACES, {"prefix": "a"}, format="json").status_code == 400
    assert api.post(BATCH, {"ops": [{"op": "drop"}]}, format="json").status_code == 400
    assert api.post(BATCH, {"ops": []}, format="json").status_code == 400


def test_search_filters_compare_numbers_as_numbers_and_strings_as_strings(api: ApiClient) -> None:
    put(api, ["f"], "n9", {"score": 9, "name": "b", "tag": "x"})
    put(api, ["f"], "n10", {"score": 10, "name": "a", "tag": "y"})
    put(api, ["f"], "n2", {"score": 2.5, "name": "c"})
    put(api, ["f"], "s10", {"score": "10", "name": "10"})
    put(api, ["f"], "nested", {"score": None, "meta": {"kind": "fact", "n": 3}, "tags": ["a", "b"]})
    put(api, ["f"], "flag", {"score": True})

    def found(filter_: dict[str, Any]) -> set[str]:
        return set(keys(search(api, namespace_prefix=["f"], filter=filter_, limit=100)))

    assert found({"score": {"$gt": 9}}) == {"n10"}
    assert found({"score": {"$gte": 9}}) == {"n9", "n10"}
    assert found({"score": {"$lt": 9}}) == {"n2"}
    assert found({"score": {"$lte": 2.5}}) == {"n2"}
    assert found({"score": {"$gt": 2, "$lt": 10}}) == {"n9", "n2"}
    assert found({"score": {"$gt": "1"}}) == {"s10"}
    assert found({"name": {"$gt": "a"}}) == {"n9", "n2"}
    assert found({"score": 10}) == {"n10"}
    assert found({"score": {"$eq": "10"}}) == {"s10"}
    assert found({"score": None}) == {"nested"}
    assert found({"score": True}) == {"flag"}
    assert found({"tag": {"$ne": "x"}}) == {"n10", "n2", "s10", "nested", "flag"}
    assert found({"meta": {"kind": "fact"}}) == {"nested"}
    assert found({"meta": {"n": {"$gte": 3}}}) == {"nested"}
    assert found({"tags": ["a", "b"]}) == {"nested"}
    assert found({"tags": ["b", "a"]}) == set()
    assert found({"name": "a", "tag": "y"}) == {"n10"}


def test_search_prefix_limit_offset_and_order(api: ApiClient) -> None:
    for index in range(5):
        put(api, ["docs", "a"], f"a{index}", {"i": index})
    put(api, ["docs", "ab"], "other", {"i": 9})
    put(api, ["docsx"], "outside", {"i": 9})
    under = search(api, namespace_prefix=["docs", "a"], limit=10)
    assert keys(under) == ["a4", "a3", "a2", "a1", "a0"]  # newest update first
    pages = [keys(search(api, namespace_prefix=["docs", "a"], limit=2, offset=o)) for o in (0, 2, 4)]
    assert pages == [["a4", "a3"], ["a2", "a1"], ["a0"]]
    assert set(keys(search(api, namespace_prefix=["docs"], limit=10))) == {*keys(under), "other"}
    assert len(search(api, limit=100)) == 7


def test_list_namespaces_prefix_suffix_wildcards_depth(api: ApiClient) -> None:
    for namespace in (
        ["a", "b", "c"],
        ["a", "b", "d", "e"],
        ["a", "b", "d", "i"],
        ["a", "c", "f"],
        ["b", "a", "f"],
        ["users", "123"],
        ["users", "456", "settings"],
    ):
        put(api, namespace, "k", {"v": 1})

    def listed(**body: Any) -> list[list[str]]:
        response = api.post(NAMESPACES, body, format="json")
        assert response.status_code == 200, response.content
        return list(response.json()["namespaces"])

    assert listed(prefix=["a", "b"]) == [["a", "b", "c"], ["a", "b", "d", "e"], ["a", "b", "d", "i"]]
    assert listed(suffix=["f"]) == [["a", "c", "f"], ["b", "a", "f"]]
    assert listed(prefix=["a", "*", "f"]) == [["a", "c", "f"]]
    assert listed(suffix=["*", "f"]) == [["a", "c", "f"], ["b", "a", "f"]]
    assert listed(prefix=["a"], suffix=["d", "*"]) == [["a", "b", "d", "e"], ["a", "b", "d", "i"]]
    assert listed(prefix=["a"], max_depth=2) == [["a", "b"], ["a", "c"]]
    assert listed(max_depth=1) == [["a"], ["b"], ["users"]]
    assert listed(prefix=["users"], max_depth=2) == [["users", "123"], ["users", "456"]]
    assert listed(limit=2, offset=1) == [["a", "b", "d", "e"], ["a", "b", "d", "i"]]
    assert listed(prefix=["nope"]) == []


def test_expired_item_is_invisible_at_once_and_swept(api: ApiClient, workspace: Workspace) -> None:
    put(api, ["t"], "short", {"v": 1}, ttl=1)
    put(api, ["t"], "long", {"v": 2}, ttl=60)
    with time_machine.travel(timezone.now() + timedelta(minutes=2), tick=False):
        assert get(api, ["t"], "short").status_code == 404
        assert keys(search(api, namespace_prefix=["t"])) == ["long"]
        put(api, ["gone"], "x", {"v": 1}, ttl=1)
    with time_machine.travel(timezone.now() + timedelta(minutes=4), tick=False):
        assert api.post(NAMESPACES, {}, format="json").json()["namespaces"] == [["t"]]
        assert StoreItem.objects.filter(workspace=workspace).count() == 3  # not swept yet
        assert store_sweep_expired() == 2
    assert list(StoreItem.objects.values_list("key", flat=True)) == ["long"]


def test_reads_refresh_the_ttl_unless_told_not_to(api: ApiClient) -> None:
    start = timezone.now()
    put(api, ["t"], "k", {"v": 1}, ttl=10)
    with time_machine.travel(start + timedelta(minutes=8), tick=False):
        assert get(api, ["t"], "k", refresh_ttl="false").status_code == 200
    with time_machine.travel(start + timedelta(minutes=9), tick=False):
        assert get(api, ["t"], "k").status_code == 200  # refreshed: now lives to minute 19
    with time_machine.travel(start + timedelta(minutes=15), tick=False):
        assert keys(search(api, namespace_prefix=["t"])) == ["k"]  # refreshed again: to minute 25
    with time_machine.travel(start + timedelta(minutes=24), tick=False):
        assert keys(search(api, namespace_prefix=["t"], refresh_ttl=False)) == ["k"]
    with time_machine.travel(start + timedelta(minutes=26), tick=False):
        assert get(api, ["t"], "k").status_code == 404


def test_an_expired_item_put_again_starts_afresh(api: ApiClient) -> None:
    start = timezone.now()
    put(api, ["t"], "k", {"v": 1}, ttl=1)
    with time_machine.travel(start + timedelta(minutes=5), tick=False):
        put(api, ["t"], "k", {"v": 2})
        body = get(api, ["t"], "k").json()
    assert body["value"] == {"v": 2}
    assert body["created_at"] == body["updated_at"]


def test_batch_runs_operations_in_order(api: ApiClient) -> None:
    ops = [
        {"op": "put", "namespace": ["b"], "key": "1", "value": {"n": 1}},
        {"op": "get", "namespace": ["b"], "key": "1"},
        {"op": "put", "namespace": ["b", "c"], "key": "2", "value": {"n": 2}},
        {"op": "search", "namespace_prefix": ["b"], "filter": {"n": {"$gt": 1}}},
        {"op": "list_namespaces", "prefix": ["b"]},
        {"op": "put", "namespace": ["b"], "key": "1", "value": None},
        {"op": "get", "namespace": ["b"], "key": "1"},
    ]
    response = api.post(BATCH, {"ops": ops}, format="json")
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert results[0] is None
    assert results[1]["value"] == {"n": 1}
    assert results[2] is None
    assert [item["key"] for item in results[3]] == ["2"]
    assert results[4] == [["b"], ["b", "c"]]
    assert results[5] is None
    assert results[6] is None


def test_search_ranks_by_client_vectors(api: ApiClient) -> None:
    put(api, ["v"], "east", {"t": "east"}, vectors=[[1.0, 0.0]])
    put(api, ["v"], "north", {"t": "north"}, vectors=[[0.0, 1.0]])
    put(api, ["v"], "both", {"t": "both"}, vectors=[[0.0, 1.0], [0.8, 0.6]])
    put(api, ["v"], "plain", {"t": "none"}, index=False)
    found = search(api, namespace_prefix=["v"], query="east-ish", query_vector=[1.0, 0.1])
    assert keys(found) == ["east", "both", "north", "plain"]
    assert found[0]["score"] == pytest.approx(0.995, abs=1e-3)
    assert found[1]["score"] == pytest.approx(0.856, abs=1e-3)  # its best vector counts
    assert "score" not in found[3]
    closer = search(api, namespace_prefix=["v"], query_vector=[0.6, 0.8])
    assert keys(closer) == ["both", "north", "east", "plain"]
    assert keys(search(api, namespace_prefix=["v"], query_vector=[0.6, 0.8], limit=1, offset=1)) == ["north"]
    mismatch = api.post(SEARCH, {"query_vector": [1.0, 0.0, 0.0]}, format="json")
    assert mismatch.status_code == 400
