"""Jobs: submitted inside the request's transaction, published to the broker after commit, executed by a
worker through `job_execute`, which claims the row with a conditional UPDATE (so a redelivered task does its
work once) and records success or failure on it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from celery import Task
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerOperationalError

from checkpoints.exceptions import Unavailable
from checkpoints.models import Job, Workspace

logger = logging.getLogger(__name__)

# Errors a handler may raise to ask for a retry (the task's autoretry_for); anything else fails the job.
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (ConnectionError, TimeoutError)


def job_submit(*, workspace: Workspace, kind: str, params: dict[str, Any], task: Task) -> Job:
    """Create a queued Job in the caller's transaction and publish `task(job.pk)` once it commits.

    If the broker refuses the message the job row is deleted again and Unavailable (503) is raised, so a
    client never sees a job that no worker will run.
    """
    job = Job.objects.create(workspace=workspace, kind=kind, params=params)

    def publish() -> None:
        try:
            result = task.apply_async(args=[job.pk], retry=False)
        except (BrokerOperationalError, OSError) as exc:
            Job.objects.filter(pk=job.pk).delete()
            logger.warning("broker unavailable, job %s withdrawn: %s", job.job_id, exc)
            raise Unavailable("The job queue is unavailable; nothing was queued. Retry shortly.") from exc
        Job.objects.filter(pk=job.pk, celery_task_id="").update(celery_task_id=result.id or "")

    transaction.on_commit(publish)
    return job


def _stale_before() -> Any:
    # A task cannot outlive the hard time limit, so a job "running" for longer than that lost its worker.
    return timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)


def job_claim(job_pk: int) -> Job | None:
    """Move a queued (or abandoned running) job to running; None if another delivery already has it,
    it has finished, or the row is gone."""
    claimable = Q(status=Job.Status.QUEUED) | Q(status=Job.Status.RUNNING, started_at__lt=_stale_before())
    claimed = Job.objects.filter(claimable, pk=job_pk).update(
        status=Job.Status.RUNNING, started_at=timezone.now(), attempts=F("attempts") + 1
    )
    return Job.objects.select_related("workspace").get(pk=job_pk) if claimed else None


def job_execute(job_pk: int, handler: Callable[[Job], dict[str, Any] | None]) -> Job | None:
    """Run `handler` for a job exactly once per successful claim and record the outcome on the row.

    Transient errors put the job back in the queue and re-raise (the task retries it with backoff); any
    other error marks the job failed with its message. Returns the finished job, or None if not claimed.
    """
    job = job_claim(job_pk)
    if job is None:
        return None
    try:
        result = handler(job)
    except TRANSIENT_ERRORS:
        Job.objects.filter(pk=job.pk).update(status=Job.Status.QUEUED)
        raise
    except Exception as exc:  # the failure is the job's result: recorded on the row, logged, not re-raised
        logger.exception("job %s (%s) failed", job.job_id, job.kind)
        job_finish(job, status=Job.Status.FAILED, error=f"{type(exc).__name__}: {exc}")
        return job
    job_finish(job, status=Job.Status.SUCCEEDED, result=result or {})
    return job


def job_finish(job: Job, *, status: str, result: dict[str, Any] | None = None, error: str = "") -> None:
    job.status, job.result, job.error, job.finished_at = status, result, error[:10_000], timezone.now()
    Job.objects.filter(pk=job.pk).update(
        status=job.status, result=job.result, error=job.error, finished_at=job.finished_at
    )
