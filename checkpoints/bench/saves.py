"""Checkpoint save and restore through the HTTP API, against raw psycopg on the same database and against
the floor (the least an HTTP service can do).

API save:    `POST /api/v1/threads/{t}/checkpoints/?include_state=false` with `{"agent_id", "state"}` (the
             server parses, canonicalises, hashes the whole record, locks the thread, defaults the parent,
             inserts, touches the thread, writes the head through to Redis), over a keep-alive connection.
API restore: `GET /api/v1/threads/{t}/checkpoints/{id}/` (one query, re-hashed, the stored text spliced
             into the response).
Raw save:    SHA-256 of the state text, then one autocommit `INSERT ... RETURNING id` into a table with
             only a primary key.
Raw restore: one primary-key `SELECT`, then SHA-256 of the text and a compare.
Floor:       the same save and restore over HTTP by a WSGI app with no framework (`checkpoints.bench.floor`)
             served by the same gunicorn command as Cairn: parse, canonical-encode, SHA-256, one INSERT;
             one SELECT, re-hash, splice.

The three take turns in rounds (never two at once): a machine whose speed drifts during the run (a shared
VM) then skews no ratio.

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


def _http_case(
    http: list[httpx.Client],
    case: SaveCase,
    body: bytes,
    *,
    save_path: Callable[[int], str],
    id_key: str,
    restore_path: Callable[[int, str], str],
) -> tuple[Sample, Sample]:
    """Save `body` then restore what was saved, each client on its own connection `http[index]`."""
    saved: list[list[str]] = [[] for _ in range(case.clients)]

    def save_op(index: int) -> Operation:
        path = save_path(index)

        def op(_n: int) -> None:
            answer = _expect(http[index].post(path, content=body), 201)
            saved[index].append(str(answer.json()[id_key]))

        return op

    def restore_op(index: int) -> Operation:
        def op(n: int) -> None:
            answer = _expect(http[index].get(restore_path(index, saved[index][n])), 200)
            if answer.headers.get("X-Checksum-Verified") != "true":
                raise BenchError("a restore was not verified")

        return op

    save = run_clients(case.clients, case.operations, save_op)
    restore = run_clients(case.clients, case.operations, restore_op)
    return save, restore


def api_case(api: ApiClients, case: SaveCase, body: bytes, tag: str) -> tuple[Sample, Sample]:
    return _closing_case(
        [api.client() for _ in range(case.clients)],
        case,
        body,
        save_path=lambda index: f"threads/{tag}-{index}/checkpoints/?include_state=false",
        id_key="checkpoint_id",
        restore_path=lambda index, saved: f"threads/{tag}-{index}/checkpoints/{saved}/",
    )


def state_case(api: ApiClients, case: SaveCase, tag: str) -> Sample:
    """`GET state/` of the threads `api_case` saved into under `tag` (their head), each client on its own."""
    http = [api.client() for _ in range(case.clients)]

    def state_op(index: int) -> Operation:
        def op(_n: int) -> None:
            _expect(http[index].get(f"threads/{tag}-{index}/state/"), 200)

        return op

    try:
        return run_clients(case.clients, case.operations, state_op)
    finally:
        for client in http:
            client.close()


def floor_case(base_url: str, case: SaveCase, body: bytes, tag: str) -> tuple[Sample, Sample]:
    headers = {"Content-Type": "application/json"}
    return _closing_case(
        [httpx.Client(base_url=base_url, headers=headers, timeout=120) for _ in range(case.clients)],
        case,
        body,
        save_path=lambda index: f"/save/{tag}-{index}",
        id_key="id",
        restore_path=lambda _index, saved: f"/restore/{saved}",
    )


def _closing_case(
    http: list[httpx.Client], case: SaveCase, body: bytes, **paths: Any
) -> tuple[Sample, Sample]:
    """`_http_case` over these clients, closed afterwards."""
    try:
        return _http_case(http, case, body, **paths)
    finally:
        for client in http:
            client.close()


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


def request_payload(size: int) -> tuple[str, bytes]:
    """The state's canonical text (what raw psycopg stores) and the request body every HTTP side sends."""
    state = agent_state(size)
    body = json.dumps({"agent_id": "bench", "state": state}, separators=(",", ":")).encode()
    return canonical_json(state), body


def warm_up(api: ApiClients, floor_url: str, database_url: str, clients: int) -> None:
    """A few untimed round trips on every gunicorn worker and connection (imports, connections, plans),
    then planner statistics for every table, as pgbench analyzes after loading: statistics are
    PostgreSQL's job (autovacuum), and a benchmark database is younger than autovacuum's first visit."""
    case = SaveCase(size=2048, clients=clients, operations=5)
    text, body = request_payload(2048)
    api_case(api, case, body, "warmup")
    floor_case(floor_url, case, body, "warmup")
    _raw_case(database_url, case, text, "warmup")
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("ANALYZE")


ROUNDS = 4


def _rounds(case: SaveCase) -> list[SaveCase]:
    """`case` cut into up to ROUNDS parts (the same clients, the operations shared out)."""
    count = min(ROUNDS, case.operations)
    share, rest = divmod(case.operations, count)
    return [SaveCase(case.size, case.clients, share + (1 if n < rest else 0)) for n in range(count)]


def _merged(samples: list[Sample]) -> Sample:
    return Sample([value for sample in samples for value in sample.latencies], sum(s.wall for s in samples))


def _ratio(numerator: float, denominator: float, scale: float = 1.0) -> float | None:
    return round(scale * numerator / denominator, 2) if denominator else None


def _row(case: SaveCase, op: str, api: Sample, raw: Sample, floor: Sample) -> dict[str, Any]:
    return {
        "size": human_size(case.size),
        "size_bytes": case.size,
        "clients": case.clients,
        "op": op,
        "api": api.summary(),
        "raw": raw.summary(),
        "floor": floor.summary(),
        "ratio_p50": _ratio(api.p50_ms, raw.p50_ms),
        "ratio_throughput": _ratio(raw.ops_per_s, api.ops_per_s),
        # Against the floor: how far Cairn is from the least an HTTP service must do.
        "floor_ratio_p50": _ratio(api.p50_ms, floor.p50_ms),
        "floor_throughput_pct": _ratio(api.ops_per_s, floor.ops_per_s, 100),
        # How far the floor itself is from raw psycopg: the price of HTTP + gunicorn + a process hop.
        "floor_over_raw_p50": _ratio(floor.p50_ms, raw.p50_ms),
    }


def bench_saves(
    *,
    api: ApiClients,
    floor_url: str,
    database_url: str,
    cases: list[SaveCase],
    log: Callable[[str], None],
) -> list[dict[str, Any]]:
    """Save then restore, through the API, the floor (`checkpoints.bench.floor` served at `floor_url`) and
    raw psycopg, for each case; one row per (case, operation). The three take turns in ROUNDS rounds, one
    at a time, so a change in the machine's speed during the run weighs on all three alike."""
    raw_table_create(database_url)
    warm_up(api, floor_url, database_url, max(case.clients for case in cases))
    rows = []
    for case in cases:
        text, body = request_payload(case.size)
        tag = f"s{case.size}-c{case.clients}"
        log(f"  saves: {human_size(case.size)} x {case.clients} client(s) x {case.operations} ops")
        turns: dict[str, list[tuple[Sample, Sample]]] = {"api": [], "floor": [], "raw": []}
        for part in _rounds(case):
            turns["api"].append(api_case(api, part, body, tag))
            turns["floor"].append(floor_case(floor_url, part, body, tag))
            turns["raw"].append(_raw_case(database_url, part, text, tag))
        saved = {side: _merged([save for save, _ in pairs]) for side, pairs in turns.items()}
        restored = {side: _merged([restore for _, restore in pairs]) for side, pairs in turns.items()}
        rows += [
            _row(case, "save", saved["api"], saved["raw"], saved["floor"]),
            _row(case, "restore", restored["api"], restored["raw"], restored["floor"]),
        ]
    return rows
