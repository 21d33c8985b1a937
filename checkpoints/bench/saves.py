"""Checkpoint save and restore through the HTTP API, against the floor: raw psycopg on the same database.

API save:    `POST /api/v1/threads/{t}/checkpoints/?include_state=false` with `{"agent_id", "state"}` (the
             server parses, canonicalises, hashes the whole record, locks the thread, defaults the parent,
             inserts, touches the thread, writes the head through to Redis), over a keep-alive connection.
API restore: `GET /api/v1/threads/{t}/checkpoints/{id}/` (one query, re-hashed, the stored text spliced
             into the response).
Raw save:    SHA-256 of the state text, then one autocommit `INSERT ... RETURNING id` into a table with
             only a primary key.
Raw restore: one primary-key `SELECT`, then SHA-256 of the text and a compare.

Bodies are encoded before the clock starts, on both sides: what is timed is the service, not the client's
JSON encoder.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg

from checkpoints.bench.payloads import agent_state, human_size
from checkpoints.bench.stats import BenchError, Operation, Sample, run_clients
from checkpoints.integrity import canonical_json

RAW_TABLE = "bench_raw_checkpoint"
RAW_INSERT = (
    "INSERT INTO bench_raw_checkpoint (thread_id, checkpoint_id, state, checksum) "
    "VALUES (%s, %s, %s, %s) RETURNING id"
)
RAW_SELECT = "SELECT state, checksum FROM bench_raw_checkpoint WHERE id = %s"


@dataclass(frozen=True)
class SaveCase:
    size: int
    clients: int
    operations: int  # per client


def raw_table_create(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {RAW_TABLE} (id bigserial PRIMARY KEY, thread_id text NOT NULL, "
            "checkpoint_id text NOT NULL, state text NOT NULL, checksum char(64) NOT NULL, "
            "created_at timestamptz NOT NULL DEFAULT now())"
        )


def _expect(response: httpx.Response, status: int) -> httpx.Response:
    if response.status_code != status:
        raise BenchError(
            f"{response.request.method} {response.request.url} answered {response.status_code}: "
            f"{response.text[:500]}"
        )
    return response


class ApiClients:
    """One keep-alive HTTP connection per benchmark client, to the API of the server under test."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self.base_url = base_url
        self.api_key = api_key

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=f"{self.base_url}/api/v1/",
            headers={"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json"},
            timeout=120,
        )


def _api_case(api: ApiClients, case: SaveCase, body: bytes, tag: str) -> tuple[Sample, Sample]:
    saved: list[list[str]] = [[] for _ in range(case.clients)]
    http = [api.client() for _ in range(case.clients)]
    try:

        def save_op(index: int) -> Operation:
            path = f"threads/{tag}-{index}/checkpoints/?include_state=false"

            def op(_n: int) -> None:
                answer = _expect(http[index].post(path, content=body), 201)
                saved[index].append(answer.json()["checkpoint_id"])

            return op

        def restore_op(index: int) -> Operation:
            prefix = f"threads/{tag}-{index}/checkpoints/"

            def op(n: int) -> None:
                answer = _expect(http[index].get(f"{prefix}{saved[index][n]}/"), 200)
                if answer.headers.get("X-Checksum-Verified") != "true":
                    raise BenchError("a restore was not verified")

            return op

        save = run_clients(case.clients, case.operations, save_op)
        restore = run_clients(case.clients, case.operations, restore_op)
    finally:
        for client in http:
            client.close()
    return save, restore


def _raw_case(database_url: str, case: SaveCase, text: str, tag: str) -> tuple[Sample, Sample]:
    conns = [psycopg.connect(database_url, autocommit=True) for _ in range(case.clients)]
    saved: list[list[int]] = [[] for _ in range(case.clients)]
    try:

        def save_op(index: int) -> Operation:
            conn = conns[index]

            def op(_n: int) -> None:
                checksum = hashlib.sha256(text.encode("utf-8")).hexdigest()
                row = conn.execute(
                    RAW_INSERT, (f"{tag}-{index}", uuid.uuid4().hex, text, checksum)
                ).fetchone()
                assert row is not None
                saved[index].append(row[0])

            return op

        def restore_op(index: int) -> Operation:
            conn = conns[index]

            def op(n: int) -> None:
                row = conn.execute(RAW_SELECT, (saved[index][n],)).fetchone()
                if row is None or hashlib.sha256(row[0].encode("utf-8")).hexdigest() != row[1]:
                    raise BenchError("raw restore: row missing or checksum mismatch")

            return op

        save = run_clients(case.clients, case.operations, save_op)
        restore = run_clients(case.clients, case.operations, restore_op)
    finally:
        for conn in conns:
            conn.close()
    return save, restore


def warm_up(api: ApiClients, database_url: str, clients: int) -> None:
    """A few untimed round trips on every gunicorn worker and connection (imports, connections, plans)."""
    case = SaveCase(size=2048, clients=clients, operations=5)
    text = canonical_json(agent_state(2048))
    _api_case(api, case, json.dumps({"agent_id": "bench", "state": json.loads(text)}).encode(), "warmup")
    _raw_case(database_url, case, text, "warmup")


def _row(case: SaveCase, op: str, api: Sample, raw: Sample) -> dict[str, Any]:
    return {
        "size": human_size(case.size),
        "size_bytes": case.size,
        "clients": case.clients,
        "op": op,
        "api": api.summary(),
        "raw": raw.summary(),
        "ratio_p50": round(api.p50_ms / raw.p50_ms, 2) if raw.p50_ms else None,
        "ratio_throughput": round(raw.ops_per_s / api.ops_per_s, 2) if api.ops_per_s else None,
    }


def bench_saves(
    *, api: ApiClients, database_url: str, cases: list[SaveCase], log: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Save then restore, API and raw, for each case; one row per (case, operation)."""
    raw_table_create(database_url)
    warm_up(api, database_url, max(case.clients for case in cases))
    rows = []
    for case in cases:
        state = agent_state(case.size)
        text = canonical_json(state)
        body = json.dumps({"agent_id": "bench", "state": state}, separators=(",", ":")).encode()
        tag = f"s{case.size}-c{case.clients}"
        log(f"  saves: {human_size(case.size)} x {case.clients} client(s) x {case.operations} ops")
        api_save, api_restore = _api_case(api, case, body, tag)
        raw_save, raw_restore = _raw_case(database_url, case, text, tag)
        rows += [_row(case, "save", api_save, raw_save), _row(case, "restore", api_restore, raw_restore)]
    return rows
