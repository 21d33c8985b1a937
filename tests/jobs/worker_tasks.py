"""Job tasks that exist only for tests: loaded into real workers (`celery worker -I tests.jobs.worker_tasks`)
and run in-process in eager mode. Thin, like the real ones: each calls `job_execute` with one handler."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from celery import Task, shared_task

from checkpoints.models import Job
from checkpoints.services.jobs import job_execute
from checkpoints.tasks import RETRY_POLICY, JobTask, is_last_attempt

GATE_TIMEOUT_SECONDS = 120


def fail(job: Job) -> dict[str, Any]:
    raise RuntimeError(f"boom: {job.params['reason']}")


def wait_for_gate(job: Job) -> dict[str, Any]:
    """Stay running until the test creates the gate file, then record this execution in the log file."""
    gate = Path(job.params["gate"])
    deadline = time.monotonic() + GATE_TIMEOUT_SECONDS
    while not gate.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the test never opened the gate")
        time.sleep(0.05)
    with Path(job.params["log"]).open("a") as log:
        log.write(f"executed job {job.pk} attempt {job.attempts}\n")
    return {"gate": "opened"}


def flaky(job: Job) -> dict[str, Any]:
    """A peer that is unreachable for the first `failures` attempts."""
    if job.attempts <= job.params["failures"]:
        raise ConnectionError(f"peer unreachable (attempt {job.attempts})")
    return {"succeeded_on_attempt": job.attempts}


@shared_task(bind=True, base=JobTask, **RETRY_POLICY)
def failing_job(self: Task, job_pk: int) -> None:
    job_execute(job_pk, fail, retryable=not is_last_attempt(self))


@shared_task(bind=True, base=JobTask, **RETRY_POLICY)
def gated_job(self: Task, job_pk: int) -> None:
    job_execute(job_pk, wait_for_gate, retryable=not is_last_attempt(self))


@shared_task(bind=True, base=JobTask, **RETRY_POLICY)
def flaky_job(self: Task, job_pk: int) -> None:
    job_execute(job_pk, flaky, retryable=not is_last_attempt(self))
