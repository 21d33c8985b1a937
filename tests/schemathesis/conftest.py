"""A production-like server for the schemathesis run: gunicorn on a fresh database (PostgreSQL + Redis when
DATABASE_URL / REDIS_URL are set, SQLite + local memory otherwise), seeded through the API with a thread,
checkpoints, messages, pending writes, a medallion and a job, so generated requests reach real objects."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from checkpoints.bench.server import Gunicorn, Stack, bench_database, database_name
from tests.conftest import USING_POSTGRES


@dataclass
class ContractServer:
    url: str
    key: str
    root: Path
    ids: dict[str, list[str]] = field(default_factory=dict)


def _ok(response: httpx.Response) -> httpx.Response:
    assert response.status_code < 300, (response.request.method, response.request.url, response.text)
    return response


def seed(api: httpx.Client) -> dict[str, list[str]]:
    """Objects for the generated requests to find; returns the ids by kind."""
    _ok(api.post("threads/", json={"thread_id": "t-1", "name": "seeded", "tags": ["seed"],
                                    "scope": {"graph_nodes": ["repo:seed"], "tags": ["seed"]}}))  # fmt: skip
    for checkpoint_id, state in (("c-1", {"n": 1}), ("c-2", {"n": 2, "todo": ["a"]})):
        body = {"checkpoint_id": checkpoint_id, "agent_id": "seeder", "state": state, "metadata": {"k": 1}}
        _ok(api.post("threads/t-1/checkpoints/", json=body))
    _ok(api.post("threads/t-1/checkpoints/", json={"checkpoint_id": "c-1", "agent_id": "sub", "state": {},
                                                   "namespace": "sub"}))  # fmt: skip
    _ok(
        api.post(
            "threads/t-1/checkpoints/c-2/writes/",
            json={"task_id": "task", "writes": [{"channel": "x", "value": 1}]},
        )
    )
    messages = [{"message_id": "m-1", "role": "user", "content": "Plan the seed."},
                {"message_id": "m-2", "role": "assistant", "content": "We decided to seed."}]  # fmt: skip
    _ok(api.post("threads/t-1/messages/", json={"messages": messages}))
    medallion = _ok(api.post("medallions/", json={
        "scope": {"graph_nodes": ["repo:seed"], "tags": ["seed"]},
        "summary": {"high_level": "Seeded for the contract run.", "subsystems": []},
    })).json()  # fmt: skip
    job = _ok(api.post("retention/sweep/")).json()
    return {
        "threads": ["t-1"],
        "checkpoints": ["c-1", "c-2"],
        "messages": ["m-1", "m-2"],
        "medallions": [medallion["meta"]["medallion_id"]],
        "jobs": [job["job_id"]],
    }


@pytest.fixture
def contract_server(tmp_path: Path) -> Iterator[ContractServer]:
    redis_url = os.environ.get("REDIS_URL", "")
    database: contextlib.AbstractContextManager[str]
    if USING_POSTGRES:
        server_url = os.environ["DATABASE_URL"]
        name = f"{database_name(server_url) or 'cairn'}_contract_{uuid.uuid4().hex[:8]}"
        database = bench_database(server_url, name)
    else:
        database = contextlib.nullcontext("")  # an empty DATABASE_URL: the stack's own SQLite file
    with database as database_url:
        stack = Stack.create(database_url, redis_url, tmp_path)
        stack.manage("migrate", "--no-input")
        key = stack.api_key("contract")
        with Gunicorn(stack, workers=2) as web:
            server = ContractServer(web.url, key, tmp_path)
            with httpx.Client(
                base_url=f"{web.url}/api/v1/", headers={"Authorization": f"Bearer {key}"}
            ) as api:
                server.ids = seed(api)
            try:
                yield server
            finally:
                if redis_url:
                    stack.forget_cache()
