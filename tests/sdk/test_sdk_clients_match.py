"""`Client` and `AsyncClient` come from one description of each API method (checkpoints.sdk.endpoints): the
same method names, parameters and defaults; the async client's methods are coroutines. And both really
talk to the server the same way."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from checkpoints.sdk import AsyncClient, Client, NotFound
from checkpoints.sdk.endpoints.base import endpoint

# The one naming difference, as in httpx: closing an async client is `aclose`.
CLOSE = {"close": "aclose"}
# Driving a plan differs by nature: a blocking call, a coroutine, or an (async) iterator.
EXECUTOR = {"bind", "execute", "send", "run", "paginate", "from_env"}


@pytest.fixture
def clients() -> Iterator[tuple[Client, AsyncClient]]:
    sync, asyncio_client = Client("http://127.0.0.1:9", "key"), AsyncClient("http://127.0.0.1:9", "key")
    yield sync, asyncio_client
    sync.close()
    asyncio.run(asyncio_client.aclose())


def public_methods(client: object) -> set[str]:
    return {name for name in dir(client) if not name.startswith("_") and callable(getattr(client, name))}


def test_both_clients_have_the_same_public_methods(clients: tuple[Client, AsyncClient]) -> None:
    sync, async_client = clients
    assert {CLOSE.get(name, name) for name in public_methods(sync)} == public_methods(async_client)
    assert len(public_methods(sync) - EXECUTOR - set(CLOSE)) >= 40


def api_methods(client_type: type) -> dict[str, endpoint[Any, Any]]:
    return {
        name: attribute
        for name in dir(client_type)
        if isinstance(attribute := inspect.getattr_static(client_type, name), endpoint)
    }


def test_every_api_method_is_described_once_for_both_clients() -> None:
    sync_methods, async_methods = api_methods(Client), api_methods(AsyncClient)
    assert set(sync_methods) == set(async_methods)
    assert set(sync_methods) == public_methods(Client("http://127.0.0.1:9", "k")) - EXECUTOR - set(CLOSE)
    for name, method in sync_methods.items():
        assert async_methods[name] is method, name


def test_signatures_match_and_async_methods_are_coroutines(clients: tuple[Client, AsyncClient]) -> None:
    sync, async_client = clients
    for name in sorted(api_methods(Client)):
        blocking, awaited = getattr(sync, name), getattr(async_client, name)
        assert inspect.signature(blocking) == inspect.signature(awaited), name
        assert "self" not in inspect.signature(blocking).parameters, name
        assert not inspect.iscoroutinefunction(blocking), name
        assert inspect.iscoroutinefunction(awaited), name
        assert blocking.__doc__ == awaited.__doc__, name
    save = inspect.signature(sync.checkpoint_save)
    assert save.parameters["namespace"].default == ""
    assert save.parameters["thread_id"].kind is inspect.Parameter.KEYWORD_ONLY
    assert save.return_annotation == "SaveResult"
    assert inspect.signature(sync.thread_prune).parameters["strategy"].default == "keep_latest"


def test_the_executors_differ_only_in_how_they_wait(clients: tuple[Client, AsyncClient]) -> None:
    sync, async_client = clients
    assert inspect.isgeneratorfunction(sync.paginate)
    assert inspect.isasyncgenfunction(async_client.paginate)
    for name in ("send", "run", "execute"):
        assert not inspect.iscoroutinefunction(getattr(sync, name))
        assert inspect.iscoroutinefunction(getattr(async_client, name))
    assert inspect.iscoroutinefunction(async_client.aclose)


def test_an_async_method_checks_its_arguments_when_awaited(clients: tuple[Client, AsyncClient]) -> None:
    sync, async_client = clients
    with pytest.raises(ValueError, match="non-empty string id"):
        sync.thread_get("")
    pending = async_client.thread_get("")
    assert inspect.iscoroutine(pending)
    with pytest.raises(ValueError, match="non-empty string id"):
        asyncio.run(pending)


def test_both_clients_give_the_same_answers(cairn_url: str, cairn_key: str) -> None:
    with Client(cairn_url, cairn_key) as sync:
        saved = sync.checkpoint_save(thread_id="twins", agent_id="a", state={"step": 1})
        handed = sync.checkpoint_handoff("twins", saved.checkpoint.checkpoint_id, target_agent_id="b")
        sync_view = (sync.thread_get("twins"), sync.checkpoint_get("twins", handed.checkpoint_id))

    async def read() -> tuple[Any, ...]:
        async with AsyncClient(cairn_url, cairn_key) as twin:
            thread = await twin.thread_get("twins")
            restored = await twin.checkpoint_get("twins", handed.checkpoint_id)
            after = await twin.checkpoint_save(thread_id="twins", agent_id="b", state={"step": 2})
            with pytest.raises(NotFound):
                await twin.thread_get("no-such-thread")
            listed = [c.checkpoint_id async for c in twin.paginate(twin.checkpoints_list, "twins", limit=1)]
            return thread, restored, after, listed

    thread, restored, after, listed = asyncio.run(read())
    assert (thread.thread_id, thread.checkpoint_count) == (sync_view[0].thread_id, 2)
    assert restored == sync_view[1]
    assert restored.agent_id == "b" and restored.state == {"step": 1}
    # The async client resolved the head the sync client's handoff made: the new save is its child.
    assert after.checkpoint.parent_id == handed.checkpoint_id
    assert listed == [after.checkpoint.checkpoint_id, handed.checkpoint_id, saved.checkpoint.checkpoint_id]
