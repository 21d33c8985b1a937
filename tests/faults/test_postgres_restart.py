"""PostgreSQL crashes and restarts under write load (saves and pending writes), behind a live gunicorn:
clients get 503 `unavailable` (never a 500) while it is down, the SDK's retries carry its saves through,
every write that got a 2xx is in the database afterwards, and the web server recovers without being
restarted."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import httpx
import psycopg
import pytest

from checkpoints.bench.server import Gunicorn, Stack
from checkpoints.sdk import Client, RetryPolicy
from tests.faults.conftest import api_client
from tests.faults.services import PostgresCluster

pytestmark = pytest.mark.slow

WRITERS = 4


@dataclass(frozen=True)
class Outcome:
    checkpoint_id: str
    status: int
    code: str | None
    at: float


def stored_ids(database_url: str) -> list[str]:
    with psycopg.connect(database_url) as conn:
        return [row[0] for row in conn.execute("SELECT checkpoint_id FROM checkpoints_checkpoint").fetchall()]


def stored_write_ids(database_url: str) -> list[str]:
    with psycopg.connect(database_url) as conn:
        return [
            row[0] for row in conn.execute("SELECT checkpoint_id FROM checkpoints_pendingwrite").fetchall()
        ]


def outcome(name: str, response: httpx.Response) -> Outcome:
    code = response.json()["error"]["code"] if response.status_code >= 400 else None
    return Outcome(name, response.status_code, code, time.monotonic())


def write_until(stop: threading.Event, api: httpx.Client, writer: int, outcomes: list[Outcome]) -> None:
    """Save, then store a task's pending writes for that checkpoint (their own one-round-trip path: the
    thread's lock and the write pipelined), until stopped."""
    n = 0
    while not stop.is_set():
        checkpoint_id = f"w{writer}-{n}"
        n += 1
        body = {"checkpoint_id": checkpoint_id, "agent_id": "load", "state": {"n": n, "pad": "x" * 500}}
        response = api.post(f"threads/load-{writer}/checkpoints/?include_state=false", json=body)
        outcomes.append(outcome(checkpoint_id, response))
        writes = {"task_id": "task", "writes": [{"channel": "c", "value": n}]}
        response = api.post(f"threads/load-{writer}/checkpoints/{checkpoint_id}/writes/", json=writes)
        outcomes.append(outcome(f"writes:{checkpoint_id}", response))


def test_it_answers_503_during_a_crash_restart_and_loses_no_acknowledged_write(
    stack: Stack, server: Gunicorn, pg_cluster: PostgresCluster
) -> None:
    key = stack.api_key("acme", scopes="write")
    outcomes: list[Outcome] = []
    stop = threading.Event()
    clients = [api_client(server.url, key) for _ in range(WRITERS)]
    writers = [
        threading.Thread(target=write_until, args=(stop, clients[i], i, outcomes)) for i in range(WRITERS)
    ]
    for writer in writers:
        writer.start()
    try:
        time.sleep(1.5)
        pg_cluster.restart("immediate")  # like a crash: connections cut, no shutdown checkpoint
        back = time.monotonic()
        time.sleep(2.5)
    finally:
        stop.set()
        for writer in writers:
            writer.join()

    assert {o.status for o in outcomes} <= {201, 503}, {o.status for o in outcomes}
    # The writers hit the outage (the restart takes far longer than one request) and were told so.
    assert any(o.status == 503 for o in outcomes)
    assert {o.code for o in outcomes if o.status == 503} == {"unavailable"}
    assert any(o.status == 201 for o in outcomes if o.at < back), "no write succeeded before the restart"
    assert sum(o.status == 201 for o in outcomes if o.at > back + 1) >= WRITERS, "the server did not recover"
    acknowledged = {o.checkpoint_id for o in outcomes if o.status == 201}
    saves = {name for name in acknowledged if not name.startswith("writes:")}
    assert saves <= set(stored_ids(stack.database_url)), "a save answered 201 is missing"
    writes = {name.removeprefix("writes:") for name in acknowledged - saves}
    assert writes, "no pending writes were stored"
    assert writes <= set(stored_write_ids(stack.database_url)), "pending writes answered 201 are missing"

    # Recovered for good: every worker serves reads and writes again (no web server restart).
    api = clients[0]
    assert [api.get("checkpoints/?limit=1").status_code for _ in range(6)] == [200] * 6
    assert api.post("threads/after/checkpoints/", json={"agent_id": "a", "state": {}}).status_code == 201


def test_the_sdk_retries_its_saves_through_a_restart(
    stack: Stack, server: Gunicorn, pg_cluster: PostgresCluster
) -> None:
    retry = RetryPolicy(max_retries=10, backoff_base=0.2, backoff_max=1.0)
    saved: list[str] = []
    with Client(server.url, stack.api_key("acme", scopes="write"), retry=retry) as sdk:
        restarter = threading.Timer(0.5, pg_cluster.restart, args=("immediate",))
        restarter.start()
        try:
            for n in range(40):
                saved.append(
                    sdk.checkpoint_save(
                        thread_id="sdk", agent_id="a", state={"n": n}
                    ).checkpoint.checkpoint_id
                )
        finally:
            restarter.join()
        assert restarter.finished.is_set()
        chain = [c for c in sdk.paginate(sdk.checkpoints_list, "sdk")]
    # Every save stored exactly once (a retried save reuses its id), in order, each the parent of the next.
    assert [c.checkpoint_id for c in chain] == saved[::-1]
    assert [c.parent_id for c in chain] == [*saved[::-1][1:], None]
    assert sorted(stored_ids(stack.database_url)) == sorted(saved)
