"""`GET threads/{id}/state/` is served from the cache and is never staler than the database, after every kind
of write that can change a head; with Redis down every endpoint still answers from the database."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.core.cache import cache
from django.test import override_settings
from django.utils import timezone

from checkpoints.cache import ResilientRedisCache
from checkpoints.models import Checkpoint, Thread
from checkpoints.parts import enabled
from checkpoints.services.checkpoints import checkpoints_tombstone
from checkpoints.storage.state_cache import head_cache_get
from tests.conftest import ApiClient

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("part_on_and_off")]
PART = "head_cache"  # run on and off: checkpoints.parts

THREADS = "/api/v1/threads/"
STATE = f"{THREADS}t1/state/"


def _cache_settings(kind: str) -> dict[str, Any]:
    if kind == "redis":
        return {
            "default": {
                "BACKEND": "checkpoints.cache.ResilientRedisCache",
                "LOCATION": os.environ["REDIS_URL"],
                "KEY_PREFIX": "cairn-test-state",
                "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
            }
        }
    return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "state-test"}}


@pytest.fixture(params=["locmem", pytest.param("redis", marks=pytest.mark.redis)])
def state_cache(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test once on local memory and once on real Redis (when REDIS_URL is set)."""
    with override_settings(CACHES=_cache_settings(request.param)):
        cache.clear()
        yield request.param


def save(api: ApiClient, checkpoint_id: str, thread_id: str = "t1", **extra: Any) -> dict[str, Any]:
    body = {"checkpoint_id": checkpoint_id, "agent_id": "a", "state": {"id": checkpoint_id}, **extra}
    response = api.post(f"{THREADS}{thread_id}/checkpoints/", body)
    assert response.status_code == 201, response.json()
    return dict(response.json())


def warm(api: ApiClient, thread_id: str = "t1") -> dict[str, Any]:
    """Read the state (filling the cache) and check the entry really is in the cache under test."""
    response = api.get(f"{THREADS}{thread_id}/state/")
    assert response.status_code == 200, response.json()
    thread = Thread.objects.get(workspace=api.workspace, thread_id=thread_id)
    assert (head_cache_get(thread, "", timezone.now()) is not None) is enabled("head_cache")
    return dict(response.json())


def head(api: ApiClient, thread_id: str = "t1") -> Any:
    response = api.get(f"{THREADS}{thread_id}/state/")
    return response.json()["checkpoint_id"] if response.status_code == 200 else response.status_code


@pytest.mark.needs_part
def test_it_serves_a_warm_head_from_the_cache(
    state_cache: str, api: ApiClient, django_assert_num_queries: Any
) -> None:
    save(api, "c1")
    warm(api)
    with django_assert_num_queries(1):  # the thread row; no checkpoint query (the key is remembered)
        assert head(api) == "c1"


def test_it_is_fresh_after_a_save(state_cache: str, api: ApiClient) -> None:
    save(api, "c1")
    warm(api)
    save(api, "c2")
    assert head(api) == "c2"


def test_it_is_fresh_after_put_state(state_cache: str, api: ApiClient) -> None:
    save(api, "c1")
    warm(api)
    response = api.put(
        STATE, {"checkpoint_id": "c2", "agent_id": "a", "state": {"n": 2}}, HTTP_IF_MATCH='"c1"'
    )
    assert response.status_code == 201
    assert head(api) == "c2"
    stale = api.put(STATE, {"checkpoint_id": "c3", "agent_id": "a", "state": {}}, HTTP_IF_MATCH='"c1"')
    assert stale.status_code == 412
    assert head(api) == "c2"


def test_it_is_fresh_after_expiring_the_head(state_cache: str, api: ApiClient) -> None:
    save(api, "c1")
    save(api, "c2")
    warm(api)
    assert api.delete(f"{THREADS}t1/checkpoints/c2/").status_code == 204
    assert head(api) == "c1"
    warm(api)
    assert api.delete(f"{THREADS}t1/checkpoints/c1/").status_code == 204
    assert head(api) == 404


def test_it_is_fresh_after_a_sweep_tombstones_the_head(state_cache: str, api: ApiClient) -> None:
    save(api, "c1")
    c2 = save(api, "c2")
    warm(api)
    pk = Checkpoint.objects.get(checkpoint_id=c2["checkpoint_id"]).pk
    assert checkpoints_tombstone(pks=[pk], now=timezone.now()) == 1
    assert head(api) == "c1"


def test_it_is_fresh_after_a_ttl_or_pin_change(state_cache: str, api: ApiClient) -> None:
    save(api, "c1")
    assert warm(api)["expires_at"] is None
    response = api.post(f"{THREADS}t1/checkpoints/c1/ttl/", {"ttl_seconds": 60, "pinned": True})
    assert response.status_code == 200
    state = api.get(STATE).json()
    assert state["expires_at"] == response.json()["expires_at"] is not None
    assert state["pinned"] is True
    api.post(f"{THREADS}t1/checkpoints/c1/ttl/", {"pinned": False})
    assert api.get(STATE).json()["pinned"] is False


def test_it_is_fresh_when_a_cached_head_expires_by_time(state_cache: str, api: ApiClient) -> None:
    save(api, "c1")
    save(api, "c2", ttl_seconds=60)
    warm(api)
    with time_machine.travel(timezone.now() + timedelta(seconds=61)):
        assert head(api) == "c1"


def test_it_is_fresh_after_a_prune(state_cache: str, api: ApiClient) -> None:
    save(api, "c1")
    save(api, "c2")
    warm(api)
    assert api.post(f"{THREADS}t1/prune/", {"strategy": "keep_latest"}).json() == {"pruned": 1}
    assert head(api) == "c2"
    warm(api)
    assert api.post(f"{THREADS}t1/prune/", {"strategy": "delete"}).json() == {"pruned": 1}
    assert head(api) == 404


def test_it_is_fresh_after_a_delete(state_cache: str, api: ApiClient) -> None:
    save(api, "c1")
    warm(api)
    assert api.delete(f"{THREADS}t1/").status_code == 204
    assert head(api) == 404
    # The same thread_id again is a new thread: the old head must not come back.
    api.post(THREADS, {"thread_id": "t1"})
    assert head(api) == 404


@pytest.mark.parametrize("verb", ["fork", "copy"])
def test_it_is_fresh_on_a_fork_or_copy_target_that_reuses_a_deleted_thread_id(
    state_cache: str, api: ApiClient, verb: str
) -> None:
    save(api, "old", thread_id="target")
    warm(api, "target")
    assert api.delete(f"{THREADS}target/").status_code == 204
    save(api, "src-head", thread_id="src")
    warm(api, "src")
    response = api.post(f"{THREADS}src/{verb}/", {"thread_id": "target"})
    assert response.status_code == 201, response.json()
    assert head(api, "target") == "src-head"
    assert head(api, "src") == "src-head"
    save(api, "next", thread_id="target")
    assert head(api, "target") == "next"
    assert head(api, "src") == "src-head"


def test_it_is_unaffected_by_message_appends(state_cache: str, api: ApiClient) -> None:
    save(api, "c1")
    warm(api)
    api.post(f"{THREADS}t1/messages/", {"messages": [{"role": "user", "content": "hi"}]})
    assert head(api) == "c1"


DEAD_LOCATION = "redis://127.0.0.1:1/0"
DEAD_REDIS = {
    "default": {
        "BACKEND": "checkpoints.cache.ResilientRedisCache",
        "LOCATION": DEAD_LOCATION,
        "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
    }
}


@pytest.fixture
def redis_down() -> Iterator[None]:
    # Start without a cool-down, so the first call of the test really meets the dead port.
    ResilientRedisCache._down_until.pop(DEAD_LOCATION, None)
    with override_settings(CACHES=DEAD_REDIS):
        yield
    ResilientRedisCache._down_until.pop(DEAD_LOCATION, None)


def test_it_answers_every_thread_endpoint_from_the_database_when_redis_is_down(
    redis_down: None, api: ApiClient
) -> None:
    calls: list[tuple[Callable[..., Any], str, Any, int]] = [
        (api.post, THREADS, {"thread_id": "t1", "user_id": "u"}, 201),
        (api.put, STATE, {"checkpoint_id": "c1", "agent_id": "a", "state": {"n": 1}}, 201),
        (api.get, STATE, None, 200),
        (api.get, STATE, None, 200),
        (api.post, f"{THREADS}t1/checkpoints/", {"checkpoint_id": "c2", "agent_id": "a", "state": {}}, 201),
        (api.post, f"{THREADS}t1/messages/", {"messages": [{"role": "user", "content": "décision"}]}, 201),
        (api.get, f"{THREADS}t1/messages/", {"search": "décision"}, 200),
        (api.get, "/api/v1/messages/", {"search": "décision"}, 200),
        (api.get, THREADS, {"user_id": "u"}, 200),
        (api.get, f"{THREADS}t1/", None, 200),
        (api.patch, f"{THREADS}t1/", {"name": "n"}, 200),
        (api.get, f"{THREADS}t1/storage/", None, 200),
        (api.post, f"{THREADS}t1/fork/", {"thread_id": "f"}, 201),
        (api.post, f"{THREADS}t1/copy/", {"thread_id": "c"}, 201),
        (api.post, f"{THREADS}t1/prune/", {"strategy": "keep_latest"}, 200),
        (api.delete, f"{THREADS}t1/checkpoints/c2/", None, 204),
        (api.delete, f"{THREADS}t1/", None, 204),
    ]
    for call, url, body, expected in calls:
        response = call(url, body) if body is not None else call(url)
        assert response.status_code == expected, (url, response.content[:300])
    assert head(api, "f") == "c2"
    assert head(api, "c") == "c2"
    # The outage was real and noticed: the cache is cooling down, not serving.
    assert ResilientRedisCache._down_until[DEAD_LOCATION] > time.monotonic()
