"""Redis hung, then back with old data, then killed, then restarted empty — under a live gunicorn on
PostgreSQL. Reads and writes keep working from PostgreSQL throughout and the head is never stale; throttling
fails open while Redis is down (availability first, as documented) and counts again once it is back; job
submission answers 503 `unavailable` and leaves no job behind while the broker is down."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import redis

from checkpoints.bench.server import Gunicorn, Stack
from tests.faults.conftest import api_client
from tests.faults.services import RedisServer

pytestmark = pytest.mark.slow

# ResilientRedisCache skips Redis for 5 s after a failure; waiting a little longer lets every worker use it
# again.
COOL_DOWN = 5.5
# A request may wait for one Redis socket timeout (0.5 s) per cache call before the cool-down starts.
PROMPT = 3.0


def timed(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def save(api: httpx.Client, checkpoint_id: str, **state: Any) -> httpx.Response:
    return api.post(
        "threads/run/checkpoints/", json={"checkpoint_id": checkpoint_id, "agent_id": "a", "state": state}
    )


def head(api: httpx.Client) -> str:
    response = api.get("threads/run/state/")
    assert response.status_code == 200, response.text
    assert response.headers["X-Checksum-Verified"] == "true"
    return str(response.json()["checkpoint_id"])


def error_code(response: httpx.Response) -> str:
    return str(response.json()["error"]["code"])


def test_it_serves_from_postgresql_through_every_kind_of_redis_outage(
    make_stack: Callable[..., Stack], web: Callable[..., Gunicorn], redis_server: RedisServer
) -> None:
    stack = make_stack()
    server = web(stack)
    api = api_client(server.url, stack.api_key("acme", scopes="write"))
    throttled = api_client(server.url, stack.api_key("acme", scopes="write", throttle_rate="5/min"))
    health = httpx.Client(base_url=server.url, timeout=30)

    # Healthy: the head is cached, the throttle counts, jobs are queued on the Redis broker.
    assert save(api, "c1", n=1).status_code == 201
    assert head(api) == "c1"
    assert [throttled.get("checkpoints/").status_code for _ in range(5)] == [200] * 5
    refused = throttled.get("checkpoints/")
    assert (refused.status_code, error_code(refused)) == (429, "throttled")
    assert int(refused.headers["Retry-After"]) >= 1
    assert api.post("retention/sweep/").status_code == 202
    assert health.get("/healthz").json() == {"database": "ok", "cache": "ok", "broker": "ok"}

    # Hung (SIGSTOP): every cache call times out; requests still answer promptly, from PostgreSQL.
    redis_server.pause()
    response, took = timed(lambda: save(api, "c2", n=2))
    assert response.status_code == 201 and took < PROMPT, (response.text, took)
    response, took = timed(lambda: api.get("threads/run/state/"))
    assert response.json()["checkpoint_id"] == "c2" and took < PROMPT, took
    restored = api.get("threads/run/checkpoints/c1/")
    assert restored.status_code == 200 and restored.json()["state"] == {"n": 1}
    appended = api.post(
        "threads/run/messages/", json={"messages": [{"role": "user", "content": "Still here?"}]}
    )
    assert appended.status_code == 201
    assert [m["content"] for m in api.get("threads/run/messages/?search=still").json()["results"]] == [
        "Still here?"
    ]

    # Back (SIGCONT) with the entries it held: the head cached for an older state version is never served.
    redis_server.resume()
    time.sleep(COOL_DOWN)
    assert [head(api) for _ in range(4)] == ["c2"] * 4
    cached = redis.Redis.from_url(redis_server.url())
    assert len(list(cached.scan_iter(match="*head:*"))) >= 2  # c1's stale entry is still there, and c2's

    # Killed: still serving; the throttle lets everything through; jobs are refused whole.
    redis_server.kill()
    assert save(api, "c3", n=3).status_code == 201
    assert head(api) == "c3"
    assert [throttled.get("checkpoints/").status_code for _ in range(10)] == [200] * 10
    refused = api.post("retention/sweep/")
    assert (refused.status_code, error_code(refused)) == (503, "unavailable")
    assert len(api.get("jobs/").json()["results"]) == 1  # the healthy one: nothing half-written
    unhealthy = health.get("/healthz")
    assert unhealthy.status_code == 503
    assert unhealthy.json() == {"database": "ok", "cache": "unavailable", "broker": "unavailable"}

    # Restarted, empty: caching, throttling and jobs resume without restarting the web server.
    redis_server.start()
    time.sleep(COOL_DOWN)
    assert health.get("/healthz").status_code == 200
    assert api.post("retention/sweep/").status_code == 202
    assert len(api.get("jobs/").json()["results"]) == 2
    statuses = [throttled.get("checkpoints/").status_code for _ in range(6)]
    assert statuses == [200] * 5 + [429]
    assert head(api) == "c3"
    assert [c["checkpoint_id"] for c in api.get("threads/run/checkpoints/").json()["results"]] == [
        "c3",
        "c2",
        "c1",
    ]
