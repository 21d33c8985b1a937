"""`CairnStore` against a live server: LangGraph's own store behaviours (docs/store.md) — batch order,
get/put/search/delete/list_namespaces, prefix and suffix matching with wildcards and max_depth, filters,
pagination, TTL with refresh, non-ASCII values, search by meaning with a fake embedding."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.utils import timezone
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from checkpoints.sdk.langgraph import AsyncCairnStore, CairnStore
from tests.sdk.store_embeddings import CharacterEmbeddings

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def store(cairn_url: str, cairn_key: str) -> Iterator[CairnStore]:
    with CairnStore(cairn_url, cairn_key) as opened:
        yield opened


def counted_requests(store: CairnStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    sent: list[str] = []
    original = store.client.transport.send

    def send(call: Any) -> Any:
        sent.append(call.path)
        return original(call)

    monkeypatch.setattr(store.client.transport, "send", send)
    return sent


def test_batch_runs_every_kind_of_operation_in_order_in_one_request(
    store: CairnStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = counted_requests(store, monkeypatch)
    results: list[Any] = store.batch(
        [
            PutOp(("test", "foo"), "key1", {"data": "value1"}),
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test",), filter={"data": "value2"}),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("test",)),), max_depth=2),
            PutOp(("test", "foo"), "key1", None),
            GetOp(("test", "foo"), "key1"),
            GetOp(("test", "nowhere"), "key1"),
        ]
    )
    assert sent == ["store/batch/"]
    assert results[0] is None
    assert isinstance(results[1], Item)
    assert (results[1].namespace, results[1].key, results[1].value) == (
        ("test", "foo"),
        "key1",
        {"data": "value1"},
    )
    assert results[2] is None
    assert [(item.namespace, item.key) for item in results[3]] == [(("test", "bar"), "key2")]
    assert results[4] == [("test", "bar"), ("test", "foo")]
    assert results[5:] == [None, None, None]
    assert store.batch([]) == []


def test_put_get_update_and_delete(store: CairnStore) -> None:
    store.put(("docs", "user1"), "doc", {"title": "Draft", "tags": ["a"]})
    first = store.get(("docs", "user1"), "doc")
    assert first is not None and first.value == {"title": "Draft", "tags": ["a"]}
    store.put(("docs", "user1"), "doc", {"title": "Final"})
    second = store.get(("docs", "user1"), "doc")
    assert second is not None and second.value == {"title": "Final"}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    store.delete(("docs", "user1"), "doc")
    assert store.get(("docs", "user1"), "doc") is None
    with pytest.raises(InvalidNamespaceError):
        store.put(("with.period",), "k", {})
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "k")])


def test_non_ascii_values_and_keys_round_trip(store: CairnStore) -> None:
    value = {"text": "Grüße, 世界! Привет 👋", "nested": {"ключ": "значение"}}
    store.put(("国際", "ユーザー"), "ключ-🔑", value)
    item = store.get(("国際", "ユーザー"), "ключ-🔑")
    assert item is not None and item.value == value
    found = store.search(("国際",), filter={"text": "Grüße, 世界! Привет 👋"})
    assert [i.key for i in found] == ["ключ-🔑"]


def test_search_filters_and_pagination(store: CairnStore) -> None:
    for index in range(12):
        store.put(("items", "even" if index % 2 == 0 else "odd"), f"i{index:02}", {"n": index, "kind": "x"})
    assert {i.key for i in store.search(("items",), filter={"n": {"$gte": 10}})} == {"i10", "i11"}
    assert {i.key for i in store.search(("items", "odd"), filter={"n": {"$lt": 4}})} == {"i01", "i03"}
    assert {i.key for i in store.search(("items",), filter={"n": {"$ne": 0, "$lte": 2}})} == {"i01", "i02"}
    assert [i.key for i in store.search(("items",), filter={"n": 5, "kind": "x"})] == ["i05"]
    pages = [store.search(("items",), limit=5, offset=offset) for offset in (0, 5, 10)]
    keys = [item.key for page in pages for item in page]
    assert [len(page) for page in pages] == [5, 5, 2]
    assert sorted(keys) == [f"i{index:02}" for index in range(12)]
    assert keys[0] == "i11"  # newest update first


def test_list_namespaces_prefix_suffix_wildcards_max_depth(store: CairnStore) -> None:
    for namespace in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]:
        store.put(namespace, "k", {"v": 1})
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert store.list_namespaces(prefix=("users",), limit=1, offset=1) == [("users", "456", "settings")]
    assert store.list_namespaces(prefix=("nope",)) == []


def test_ttl_expires_and_reads_refresh_it(cairn_url: str, cairn_key: str) -> None:
    start = timezone.now()
    with CairnStore(cairn_url, cairn_key, ttl={"default_ttl": 10, "refresh_on_read": True}) as store:
        store.put(("ttl",), "kept", {"v": 1})
        store.put(("ttl",), "left", {"v": 2})
        store.put(("ttl",), "forever", {"v": 3}, ttl=None)
        with time_machine.travel(start + timedelta(minutes=8)):
            assert store.get(("ttl",), "kept") is not None  # refreshed: lives to minute 18
            assert store.get(("ttl",), "left", refresh_ttl=False) is not None
        with time_machine.travel(start + timedelta(minutes=12)):
            assert store.get(("ttl",), "left") is None
            assert {i.key for i in store.search(("ttl",))} == {"kept", "forever"}  # refreshed again
        with time_machine.travel(start + timedelta(minutes=21)):
            assert store.get(("ttl",), "kept", refresh_ttl=False) is not None
        with time_machine.travel(start + timedelta(minutes=40)):
            assert store.list_namespaces() == [("ttl",)]
            assert [i.key for i in store.search(("ttl",))] == ["forever"]
    with CairnStore(cairn_url, cairn_key, ttl={"refresh_on_read": False}) as lazy:
        lazy.put(("lazy",), "k", {"v": 1}, ttl=5)
        with time_machine.travel(start + timedelta(minutes=4)):
            assert lazy.get(("lazy",), "k") is not None  # not refreshed
        with time_machine.travel(start + timedelta(minutes=6)):
            assert lazy.get(("lazy",), "k") is None


def test_search_by_meaning_ranks_the_closer_text_first(cairn_url: str, cairn_key: str) -> None:
    embeddings = CharacterEmbeddings(dims=64)
    index = {"dims": 64, "embed": embeddings, "fields": ["text"]}
    with CairnStore(cairn_url, cairn_key, index=index) as store:  # type: ignore[arg-type]
        store.put(("docs",), "a", {"text": "zzzzzz zzzz"})
        store.put(("docs",), "b", {"text": "the quick brown fox"})
        store.put(("docs",), "c", {"text": "a quick brown dog"})
        store.put(("docs",), "unindexed", {"text": "the quick brown fox"}, index=False)
        store.put(("docs",), "fields", {"title": "qqqq", "text": "zzzz"}, index=["title"])
        store.put(("docs",), "no-text", {"title": "the quick brown fox"})  # no `text`: not embedded
        found = store.search(("docs",), query="the quick brown fox", limit=10)
        assert [i.key for i in found[:2]] == ["b", "c"]
        assert found[0].key == "b" and found[0].score == pytest.approx(1.0, abs=1e-5)
        assert (found[0].score or 0.0) > (found[1].score or 1.0)
        assert {i.key for i in found if i.score is None} == {"unindexed", "no-text"}
        by_title = store.search(("docs",), query="qqqq", limit=1)
        assert by_title[0].key == "fields"
        filtered = store.search(("docs",), query="the quick brown fox", filter={"text": "zzzzzz zzzz"})
        assert [i.key for i in filtered] == ["a"]
        assert [i.key for i in store.search(("docs",), query="brown fox", limit=1, offset=1)] == ["c"]


def test_the_async_store_does_the_same(cairn_url: str, cairn_key: str) -> None:
    async def scenario() -> None:
        embeddings = CharacterEmbeddings(dims=32)
        async with AsyncCairnStore(cairn_url, cairn_key, index={"dims": 32, "embed": embeddings}) as store:
            await store.aput(("async", "ns"), "one", {"text": "apples and pears"})
            await store.aput(("async", "ns"), "two", {"text": "zebra crossing"})
            results: list[Any] = await store.abatch(
                [
                    GetOp(("async", "ns"), "one"),
                    SearchOp(("async",), query="apples and pears", limit=2),
                    ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("ns",)),)),
                ]
            )
            assert results[0].value == {"text": "apples and pears"}
            assert [i.key for i in results[1]] == ["one", "two"]
            assert results[2] == [("async", "ns")]
            await store.adelete(("async", "ns"), "one")
            assert await store.aget(("async", "ns"), "one") is None
            assert await store.alist_namespaces(prefix=("async",)) == [("async", "ns")]

    asyncio.run(scenario())
