"""Save latency while the retention sweep tombstones a large backlog of expired checkpoints.

The backlog is loaded with COPY as it accumulates in real life: interleaved across many threads (each sweep
batch of 1,000 rows locks up to 1,000 threads). The sweep runs as `manage.py sweep_expired` in its own
process, exactly the service the beat-scheduled task calls. Meanwhile two clients save 2 KB checkpoints:
one into threads whose old checkpoints are being swept (it can meet a batch's thread lock), one into
threads the sweep never touches. Both are measured first without the sweep, for the same time.
"""

from __future__ import annotations

import random
import subprocess  # nosec B404 # runs manage.py sweep_expired with fixed argv
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg

from checkpoints.bench.loader import checkpoint_row, copy_model, thread_pks, thread_rows, workspace_pk
from checkpoints.bench.payloads import agent_state
from checkpoints.bench.saves import ApiClients, _expect
from checkpoints.bench.server import PYTHON, REPO, Stack
from checkpoints.bench.stats import BenchError, Sample, run_for
from checkpoints.integrity import canonical_json
from checkpoints.models import Checkpoint, Thread

WORKSPACE = "sweep"
PER_THREAD = 100


def load_backlog(database_url: str, workspace_pk: int, rows: int, log: Callable[[str], None]) -> list[str]:
    """`rows` expired checkpoints, round-robin over rows/PER_THREAD threads; returns the thread ids."""
    started = time.perf_counter()
    threads = [f"swept-{i:06d}" for i in range(max(1, rows // PER_THREAD))]
    state = canonical_json(agent_state(300))
    created = datetime.now(UTC) - timedelta(days=2)
    expired = datetime.now(UTC) - timedelta(days=1)
    with psycopg.connect(database_url) as conn:
        copy_model(conn, Thread, thread_rows(workspace_pk, threads, created))
        pks = thread_pks(conn, workspace_pk, threads)

        def backlog() -> Iterator[dict[str, Any]]:
            for step in range(PER_THREAD):
                for thread_id in threads:
                    yield checkpoint_row(
                        workspace_pk=workspace_pk,
                        thread_pk=pks[thread_id],
                        thread_id=thread_id,
                        checkpoint_id=f"old-{step:04d}",
                        parent_id=f"old-{step - 1:04d}" if step else None,
                        step=step,
                        state=state,
                        created_at=created + timedelta(microseconds=step),
                        expires_at=expired,
                    )

        copy_model(conn, Checkpoint, backlog())
        conn.commit()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"ANALYZE {Checkpoint._meta.db_table}")
    took = time.perf_counter() - started
    log(f"  sweep: loaded {len(threads) * PER_THREAD:,} expired checkpoints in {took:.0f} s")
    return threads


def _saver(client: httpx.Client, threads: list[str], body: bytes, seed: int) -> Callable[[], None]:
    rng = random.Random(seed)  # nosec B311 # seeded generator for reproducible benchmark data, not a secret

    def save() -> None:
        _expect(
            client.post(f"threads/{rng.choice(threads)}/checkpoints/?include_state=false", content=body), 201
        )

    return save


def _measure_pair(
    api: ApiClients, swept: list[str], body: bytes, seconds: float, until: Callable[[], bool] | None
) -> dict[str, Sample]:
    fresh = [f"fresh-{i}" for i in range(100)]
    samples: dict[str, Sample] = {}
    errors: list[BaseException] = []

    def run(name: str, threads: list[str], seed: int) -> None:
        try:
            with api.client() as client:
                samples[name] = run_for(seconds, _saver(client, threads, body, seed), until=until)
        except BaseException as exc:  # re-raised below, in the caller's thread
            errors.append(exc)

    workers = [
        threading.Thread(target=run, args=("into swept threads", swept, 1)),
        threading.Thread(target=run, args=("into other threads", fresh, 2)),
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]
    return samples


class Sweeps(threading.Thread):
    """`manage.py sweep_expired` until the backlog is gone, as beat would run it minute after minute: a
    sweep skips the threads a writer holds locked (SKIP LOCKED) and leaves their rows to the next pass."""

    def __init__(self, stack: Stack, expected: int, max_passes: int = 10) -> None:
        super().__init__(daemon=True)
        self.stack, self.expected, self.max_passes = stack, expected, max_passes
        self.expired = self.passes = 0
        self.error: BenchError | None = None

    def run(self) -> None:
        with (self.stack.root / "sweep.log").open("w") as log_file:
            while self.expired < self.expected and self.passes < self.max_passes:
                self.passes += 1
                result = subprocess.run(  # nosec B603 # argv built here from sys.executable, no shell
                    [PYTHON, str(REPO / "manage.py"), "sweep_expired", "--workspace", WORKSPACE],
                    cwd=REPO,
                    env=self.stack.env(),
                    stdout=subprocess.PIPE,
                    stderr=log_file,
                    text=True,
                    check=False,
                )
                if result.returncode != 0:
                    self.error = BenchError(f"the sweep failed ({result.returncode}); see {log_file.name}")
                    return
                counts = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
                self.expired += int(counts.get("expired", 0))
        if self.expired != self.expected:
            self.error = BenchError(f"{self.passes} sweeps tombstoned {self.expired} of {self.expected} rows")


def bench_sweep(
    *,
    base_url: str,
    stack: Stack,
    database_url: str,
    rows: int,
    idle_seconds: float,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """p50/p99 save latency without and during a sweep of `rows` expired checkpoints."""
    api = ApiClients(base_url, stack.api_key(WORKSPACE))
    swept = load_backlog(database_url, workspace_pk(database_url, WORKSPACE), rows, log)
    body = canonical_json({"agent_id": "bench", "state": agent_state(2048)}).encode()
    idle = _measure_pair(api, swept, body, idle_seconds, None)
    log("  sweep: sweeping")
    expected = len(swept) * PER_THREAD
    sweeps = Sweeps(stack, expected)
    started = time.perf_counter()
    sweeps.start()
    during = _measure_pair(api, swept, body, 24 * 3600, lambda: not sweeps.is_alive())
    sweeps.join()
    duration = time.perf_counter() - started
    if sweeps.error is not None:
        raise sweeps.error
    return {
        "rows": sweeps.expired,
        "threads": len(swept),
        "passes": sweeps.passes,
        "sweep_seconds": round(duration, 1),
        "sweep_rows_per_s": round(sweeps.expired / duration),
        "idle": {name: sample.summary() for name, sample in idle.items()},
        "during": {name: sample.summary() for name, sample in during.items()},
    }
