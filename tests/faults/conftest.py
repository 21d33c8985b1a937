"""Fixtures of the fault tests: their own PostgreSQL cluster (one per session, a fresh database per test,
copied from a migrated template) and their own redis-server (one per test). Skipped, with the reason, where
the server binaries are missing (a missing redis-server fails them under CAIRN_REQUIRE_REDIS_SERVER=1)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from checkpoints.bench.server import Gunicorn, Stack
from tests.faults.services import (
    PostgresCluster,
    RedisServer,
    missing_postgres_binaries,
    running_redis_server,
)

TEMPLATE = "cairn_template"


@pytest.fixture(scope="session")
def pg_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresCluster]:
    reason = missing_postgres_binaries()
    if reason:
        pytest.skip(reason)
    cluster = PostgresCluster()
    try:
        cluster.start()
        url = cluster.create_database(TEMPLATE)
        Stack.create(url, "", tmp_path_factory.mktemp("template")).manage("migrate", "--no-input")
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def database_url(pg_cluster: PostgresCluster) -> str:
    """A migrated database of its own in the throwaway cluster."""
    return pg_cluster.create_database(f"faults_{uuid.uuid4().hex[:10]}", template=TEMPLATE)


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with running_redis_server() as server:
        yield server


@pytest.fixture
def make_stack(database_url: str, redis_server: RedisServer, tmp_path: Path) -> Callable[..., Stack]:
    """make_stack(**settings) -> a Stack on the test's database and Redis (cache and broker)."""

    def make(**extra: str) -> Stack:
        return Stack.create(database_url, redis_server.url(), tmp_path, **extra)

    return make


@pytest.fixture
def web(make_stack: Callable[..., Stack]) -> Iterator[Callable[..., Gunicorn]]:
    """web(stack, workers=2) -> a running gunicorn (stopped at the end of the test)."""
    started: list[Gunicorn] = []

    def start(stack: Stack, workers: int = 2) -> Gunicorn:
        server = Gunicorn(stack, workers=workers)
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def stack(make_stack: Callable[..., Stack]) -> Stack:
    """A Stack with the default settings on the test's database and Redis."""
    return make_stack()


@pytest.fixture
def server(web: Callable[..., Gunicorn], stack: Stack) -> Gunicorn:
    """A running gunicorn (two workers) serving `stack`."""
    return web(stack)


def api_client(base_url: str, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"{base_url}/api/v1/", headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
