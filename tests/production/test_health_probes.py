"""`/healthz` under concurrent probes against the Procfile's `web` command: no false alarm while Redis is
healthy (each probe writes and reads back a key of its own), and a real Redis outage still reported."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from checkpoints.bench.server import Gunicorn, Stack
from tests.faults.services import RedisServer, running_redis_server

pytestmark = pytest.mark.slow

PROBES = 100


def _probe_all_at_once(url: str, count: int) -> list[tuple[int, dict[str, str]]]:
    start = threading.Barrier(count)

    def probe(_: int) -> tuple[int, dict[str, str]]:
        start.wait()
        response = httpx.get(f"{url}/healthz", timeout=60)
        return response.status_code, response.json()

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(probe, range(count)))


@pytest.mark.redis
def test_a_hundred_concurrent_probes_against_a_healthy_redis_all_answer_200(production_stack: Stack) -> None:
    with Gunicorn(production_stack, workers=4) as web:
        for _ in range(2):
            answers = _probe_all_at_once(web.url, PROBES)
            assert answers == [(200, {"database": "ok", "cache": "ok", "broker": "ok"})] * PROBES


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    with running_redis_server() as server:
        yield server


def test_probes_report_a_redis_that_stopped_listening(
    production_stack: Stack, own_redis: RedisServer
) -> None:
    # Cache and broker on a Redis of the test's own, so that it can take it away.
    stack = dataclasses.replace(production_stack, redis_url=own_redis.url())
    with Gunicorn(stack, workers=2) as web:
        assert (
            _probe_all_at_once(web.url, 10) == [(200, {"database": "ok", "cache": "ok", "broker": "ok"})] * 10
        )
        own_redis.kill()  # nothing listens on its port any more
        answers = _probe_all_at_once(web.url, 6)
    assert answers == [(503, {"database": "ok", "cache": "unavailable", "broker": "unavailable"})] * 6
