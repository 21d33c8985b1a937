"""`langgraph-sdk`'s store client, unchanged, against a live Cairn server (the Agent Protocol's routes)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client

from checkpoints.models import ApiKey, Workspace

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_sync_store_client_works_unchanged(
    cairn_url: str, cairn_key: str, sdk_workspace: Workspace, make_key: Callable[..., str]
) -> None:
    store = get_sync_client(url=f"{cairn_url}/api/v1", api_key=cairn_key).store
    store.put_item(["users", "alice"], key="prefs", value={"theme": "dark", "lang": "fr"})
    store.put_item(["users", "alice", "facts"], key="f1", value={"text": "Likes tea", "n": 3}, ttl=30)
    store.put_item(["users", "bob"], key="prefs", value={"theme": "light"})

    item = store.get_item(["users", "alice"], key="prefs")
    assert item["namespace"] == ["users", "alice"]
    assert item["key"] == "prefs"
    assert item["value"] == {"theme": "dark", "lang": "fr"}
    assert item["created_at"] and item["updated_at"]

    found = store.search_items(["users", "alice"], filter={"n": {"$gte": 3}}, limit=5)
    assert [i["key"] for i in found["items"]] == ["f1"]
    listed = store.list_namespaces(prefix=["users"], max_depth=2)
    assert listed["namespaces"] == [["users", "alice"], ["users", "bob"]]
    assert store.list_namespaces(suffix=["facts"])["namespaces"] == [["users", "alice", "facts"]]

    store.delete_item(["users", "bob"], key="prefs")
    with pytest.raises(httpx.HTTPStatusError) as missing:
        store.get_item(["users", "bob"], key="prefs")
    assert missing.value.response.status_code == 404

    reader = get_sync_client(
        url=f"{cairn_url}/api/v1", api_key=make_key(sdk_workspace, ApiKey.Scope.READ)
    ).store
    assert reader.get_item(["users", "alice"], key="prefs")["value"]["theme"] == "dark"
    with pytest.raises(httpx.HTTPStatusError) as refused:
        reader.put_item(["users", "alice"], key="prefs", value={})
    assert refused.value.response.status_code == 403


def test_the_async_store_client_works_unchanged(cairn_url: str, cairn_key: str) -> None:
    async def scenario() -> list[str]:
        store = get_client(url=f"{cairn_url}/api/v1", api_key=cairn_key).store
        for index in range(3):
            await store.put_item(["notes"], key=f"n{index}", value={"i": index})
        page = await store.search_items(["notes"], limit=2, offset=1)
        return [item["key"] for item in page["items"]]

    assert asyncio.run(scenario()) == ["n1", "n0"]


def test_a_wrong_key_is_refused(cairn_url: str) -> None:
    store = get_sync_client(url=f"{cairn_url}/api/v1", api_key="cairn_not_a_key").store
    with pytest.raises(httpx.HTTPStatusError) as refused:
        store.search_items(["users"])
    assert refused.value.response.status_code == 401
