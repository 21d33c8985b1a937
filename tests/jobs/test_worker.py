"""A real `celery worker` and `celery beat`, on the embedded filesystem broker and on Redis.

The test process plays no part in the work: a driver process submits jobs exactly as the API does (row
committed, message published on commit), the worker and beat run them, and the test reads the outcome.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.jobs.stack import Stack, fresh_postgres_database, stack_env, wait_for

pytestmark = pytest.mark.slow

EXPIRING_TTL_SECONDS = 2


@pytest.fixture(params=["filesystem", pytest.param("redis", marks=pytest.mark.redis)])
def make_stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Stack]]:
    """Builds a migrated stack with extra environment: the embedded default (SQLite + filesystem broker),
    or Redis as the broker with PostgreSQL as the database when DATABASE_URL is set."""
    with contextlib.ExitStack() as resources:

        def make(**extra: str) -> Stack:
            redis_url = database_url = ""
            if request.param == "redis":
                redis_url = os.environ["REDIS_URL"]
                if os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
                    database_url = resources.enter_context(
                        fresh_postgres_database(os.environ["DATABASE_URL"])
                    )
            env = stack_env(tmp_path, redis_url=redis_url, database_url=database_url, **extra)
            stack = Stack(tmp_path, env)
            resources.callback(stack.close)
            if redis_url:
                resources.callback(_forget_queue, redis_url, env["CELERY_TASK_DEFAULT_QUEUE"])
            stack.manage("migrate", "--no-input")
            return stack

        yield make


def _forget_queue(redis_url: str, queue: str) -> None:
    """Delete the run's queue and kombu's bookkeeping for it (the queue name is unique to the run)."""
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(match=f"*{queue}*"):
        client.delete(key)


def test_it_runs_jobs_and_the_scheduled_sweep_on_a_real_worker_and_beat(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    stack = make_stack(CAIRN_SWEEP_INTERVAL_SECONDS="1")
    drive = stack.driver
    seeded = drive("setup", expiring_ttl_seconds=EXPIRING_TTL_SECONDS)
    gate, executions = tmp_path / "gate", tmp_path / "executions.log"
    gated = drive("submit", task="gated_job", params={"gate": str(gate), "log": str(executions)})
    drive("publish", task="tests.jobs.worker_tasks.gated_job", job_pk=gated["pk"])  # delivered twice
    failing = drive("submit", task="failing_job", params={"reason": "the scope is empty"})
    sweep = drive("submit_sweep", workspace="w2")

    def job(pk: int) -> dict[str, Any]:
        return drive("jobs")[str(pk)]

    # Nothing runs them yet: every job waits in the queue.
    assert {pk: job(pk)["status"] for pk in (gated["pk"], failing["pk"], sweep["pk"])} == dict.fromkeys(
        (gated["pk"], failing["pk"], sweep["pk"]), "queued"
    )

    stack.start_worker()
    stack.start_beat()

    # The scheduled sweep (beat -> worker) turns the expired checkpoint into a tombstone.
    tombstone = wait_for(
        lambda: drive("checkpoint", pk=seeded["expiring_pk"]),
        lambda row: row["expired_at"] is not None,
        what="the beat-scheduled sweep to tombstone the expired checkpoint",
    )
    assert tombstone["state"] is None and len(tombstone["checksum"]) == 64
    # The sweep commits each batch, then writes its audit events once it is done: wait for them too.
    wait_for(
        lambda: drive("audit", action="retention.sweep"),
        lambda sweeps: any(
            e["workspace"] == "w1" and e["actor_label"] == "retention" and e["details"]["expired"] == 1
            for e in sweeps
        ),
        what="the sweep's audit event for w1",
    )
    assert drive("checkpoint", pk=seeded["kept_pk"])["expired_at"] is None

    # A failing job is recorded as failed, with its error.
    failed = wait_for(
        lambda: job(failing["pk"]), lambda j: j["status"] != "queued" and j["status"] != "running"
    )
    assert failed == {
        "status": "failed",
        "attempts": 1,
        "error": "RuntimeError: boom: the scope is empty",
        "result": None,
    }

    # "Sweep now" as a job: queued -> succeeded, with its counts.
    swept = wait_for(lambda: job(sweep["pk"]), lambda j: j["status"] == "succeeded", what="the sweep job")
    assert set(swept["result"]) == {"expired", "pruned", "workspaces"}

    # queued -> running: the gated job holds its worker until the test opens the gate ...
    running = wait_for(
        lambda: job(gated["pk"]), lambda j: j["status"] == "running", what="the gated job to start"
    )
    assert running["attempts"] == 1
    gate.touch()
    # ... -> succeeded.
    done = wait_for(
        lambda: job(gated["pk"]), lambda j: j["status"] == "succeeded", what="the gated job to finish"
    )
    assert done == {"status": "succeeded", "attempts": 1, "error": "", "result": {"gate": "opened"}}

    # Both deliveries were processed by the worker, and the work was done once.
    finished = re.compile(r"Task tests\.jobs\.worker_tasks\.gated_job\[[0-9a-f-]+\] succeeded")
    wait_for(
        lambda: len(finished.findall(stack.log("worker"))),
        lambda count: count == 2,
        what="the worker to process both deliveries of the gated job",
    )
    assert executions.read_text().splitlines() == [f"executed job {gated['pk']} attempt 1"]
    assert job(gated["pk"])["attempts"] == 1


def test_it_fails_a_job_whose_worker_is_killed_mid_job_instead_of_leaving_it_running(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    # A short abandonment limit and a reaper every second, so the test need not wait half an hour.
    stack = make_stack(CAIRN_JOB_ABANDONED_AFTER_SECONDS="3", CAIRN_JOB_REAP_INTERVAL_SECONDS="1")
    gate, executions = tmp_path / "gate", tmp_path / "executions.log"
    gated = stack.driver("submit", task="gated_job", params={"gate": str(gate), "log": str(executions)})
    stack.start_worker()

    def job() -> dict[str, Any]:
        return stack.driver("jobs")[str(gated["pk"])]

    wait_for(job, lambda j: j["status"] == "running", what="the job to start")
    worker = stack.processes["worker"]
    os.killpg(worker.pid, signal.SIGKILL)  # the worker and its pool die mid-job, with no chance to clean up
    worker.wait()
    assert job()["status"] == "running"  # nobody is left to finish it

    stack.start_beat()
    stack.start_worker("worker-2")
    reaped = wait_for(job, lambda j: j["status"] != "running", what="the reaper to fail the abandoned job")
    assert reaped["status"] == "failed"
    assert reaped["error"].startswith("Abandoned: its worker stopped without finishing it")
    assert not executions.exists()
