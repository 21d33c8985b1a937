"""A migrated stack for the production-layout tests: a fresh PostgreSQL database next to `DATABASE_URL`'s
(or a SQLite file on the embedded default), and Redis when `REDIS_URL` is set; each test starts the
Procfile's own `web` command (and Celery) on it as child processes."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import httpx
import pytest

from checkpoints.bench.server import Stack, bench_database, database_name
from tests.conftest import USING_POSTGRES


@pytest.fixture(scope="session")
def production_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with contextlib.ExitStack() as resources:
        database_url = ""
        if USING_POSTGRES:
            url = os.environ["DATABASE_URL"]
            name = f"{database_name(url) or 'cairn'}_web_{uuid.uuid4().hex[:8]}"
            database_url = resources.enter_context(bench_database(url, name))
        stack = Stack.create(database_url, os.environ.get("REDIS_URL", ""), tmp_path_factory.mktemp("web"))
        if stack.redis_url:
            resources.callback(stack.forget_cache)
        stack.manage("migrate", "--no-input")
        yield stack


def api_client(base_url: str, key: str, *, timeout: float = 10) -> httpx.Client:
    return httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout)
