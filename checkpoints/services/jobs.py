"""Jobs: submitted inside the request's transaction, published to the broker after commit, executed by a
worker through `job_execute`, which claims the row with a conditional UPDATE (so a redelivered task does its
work once) and records success or failure on it.

States: queued -> running -> succeeded | failed. A transient error puts a running job back to queued while
its task retries; a job whose worker died is taken over by a redelivery once the hard time limit has passed
(`job_claim`), or failed by the periodic reaper (`jobs_reap_abandoned`) when no redelivery comes.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F, Q
from django.utils import timezone
from kombu.exceptions import KombuError

from checkpoints.exceptions import NotFound, Unavailable
from checkpoints.models import Job, Workspace
from checkpoints.services.audit import Actor

logger = logging.getLogger(__name__)

# Errors worth retrying (the tasks' autoretry_for): the database or a network peer is briefly unreachable.
# A handler may raise ConnectionError/TimeoutError to ask for a retry; anything else fails the job.
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    OperationalError,
    InterfaceError,
    ConnectionError,
    TimeoutError,
)

_ERROR_MAX_CHARS = 10_000
_REQUESTED_BY = "requested_by"


def job_submit(
    *,
    workspace: Workspace,
    kind: str,
    params: dict[str, Any],
    task: str,
    actor: Actor | None = None,
) -> Job:
    """Create a queued Job in the caller's transaction and publish `task(job.pk)` once it commits.

    `task` is the registered name of the Celery task (`checkpoints.tasks.<name>`): services send tasks by
    name, so the task modules may import the services without an import cycle.

    `actor` (who asked) is kept in `params["requested_by"]` so the handler can audit in their name.
    If the broker refuses the message the job row is deleted again and Unavailable (503) is raised, so a
    client never sees a job that no worker will run.
    """
    if actor is not None:
        params = {**params, _REQUESTED_BY: asdict(actor)}
    job = Job.objects.create(workspace=workspace, kind=kind, params=params)

    def publish() -> None:
        try:
            result = current_app.tasks[task].apply_async(args=(job.pk,), retry=False)
        except (
            KombuError,
            OSError,
        ) as exc:  # kombu wraps connection errors; the filesystem broker raises OSError
            Job.objects.filter(pk=job.pk).delete()
            logger.warning("broker unavailable, job %s withdrawn: %s", job.job_id, exc)
            raise Unavailable("The job queue is unavailable; nothing was queued. Retry shortly.") from exc
        Job.objects.filter(pk=job.pk, celery_task_id="").update(celery_task_id=result.id or "")

    transaction.on_commit(publish)
    return job


def workspace_job_submit(workspace: Workspace, actor: Actor, kind: str, task: str) -> Job:
    """`job_submit` for a job over the whole workspace, with no parameters but who asked."""
    return job_submit(workspace=workspace, kind=kind, params={}, task=task, actor=actor)


def job_actor(job: Job) -> Actor:
    """Who asked for the job (from `job_submit(actor=...)`), or the system."""
    stored = job.params.get(_REQUESTED_BY) if isinstance(job.params, dict) else None
    if isinstance(stored, dict):
        try:
            return Actor(**stored)
        except TypeError:
            logger.warning("job %s has a malformed requested_by: %r", job.job_id, stored)
    return Actor.system(f"job:{job.kind}")


def job_params(job: Job) -> dict[str, Any]:
    """The job's own parameters, without who asked for it (`job_actor`)."""
    params = job.params if isinstance(job.params, dict) else {"value": job.params}
    return {name: value for name, value in params.items() if name != _REQUESTED_BY}


def job_get(*, workspace: Workspace, job_id: uuid.UUID) -> Job:
    """The workspace's job with this public id; another workspace's job is NotFound, as if missing."""
    job = Job.objects.for_workspace(workspace).filter(job_id=job_id).first()
    if job is None:
        raise NotFound(f"Job {job_id} not found.")
    return job


def _stale_before(now: datetime) -> datetime:
    # A task cannot outlive the hard time limit, so a job "running" for longer than that lost its worker.
    return now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)


def job_claim(job_pk: int) -> Job | None:
    """Move a queued (or abandoned running) job to running; None if another delivery already has it,
    it has finished, or the row is gone.

    One conditional UPDATE decides: of two deliveries racing for the same job, exactly one changes the row.
    """
    now = timezone.now()
    claimable = Q(status=Job.Status.QUEUED) | Q(status=Job.Status.RUNNING, started_at__lt=_stale_before(now))
    claimed = Job.objects.filter(claimable, pk=job_pk).update(
        status=Job.Status.RUNNING, started_at=now, attempts=F("attempts") + 1
    )
    return Job.objects.select_related("workspace").get(pk=job_pk) if claimed else None


def job_execute(
    job_pk: int, handler: Callable[[Job], dict[str, Any] | None], *, retryable: bool = True
) -> Job | None:
    """Run `handler` for a job exactly once per successful claim and record the outcome on the row.

    Transient errors (TRANSIENT_ERRORS) put the job back in the queue and re-raise, so the task retries it
    with backoff; on the last attempt (`retryable=False`) they fail the job instead. Any other error marks
    the job failed with its message. Returns the finished job, or None if it was not claimed.
    """
    job = job_claim(job_pk)
    if job is None:
        logger.info("job pk=%s not claimed (finished, taken or gone): nothing to do", job_pk)
        return None
    try:
        result = handler(job)
    except TRANSIENT_ERRORS as exc:
        if retryable:
            Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).update(status=Job.Status.QUEUED)
            raise
        logger.warning("job %s (%s) gave up after %s attempts: %s", job.job_id, job.kind, job.attempts, exc)
        job_finish(
            job, status=Job.Status.FAILED, error=f"{_describe(exc)} (gave up after {job.attempts} attempts)"
        )
        return job
    except Exception as exc:  # the failure is the job's result: recorded on the row, logged, not re-raised
        logger.exception("job %s (%s) failed", job.job_id, job.kind)
        job_finish(job, status=Job.Status.FAILED, error=_describe(exc))
        return job
    job_finish(job, status=Job.Status.SUCCEEDED, result=result or {})
    return job


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SoftTimeLimitExceeded):
        # Raised inside the handler wherever it was: what it had not committed is not written.
        limit = settings.CELERY_TASK_SOFT_TIME_LIMIT
        return f"Stopped at the soft time limit ({limit} s, CELERY_TASK_SOFT_TIME_LIMIT) before it finished."
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def job_finish(job: Job, *, status: str, result: dict[str, Any] | None = None, error: str = "") -> bool:
    """Record a running job's outcome; False (nothing written) if the job is no longer running."""
    now = timezone.now()
    changed = Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).update(
        status=status, result=result, error=error[:_ERROR_MAX_CHARS], finished_at=now
    )
    if changed:
        job.status, job.result, job.error, job.finished_at = status, result, error[:_ERROR_MAX_CHARS], now
    return bool(changed)


def job_fail_unfinished(*, job_pk: int, error: str) -> bool:
    """Fail a job that has not finished (its task died outside `job_execute`: hard time limit, retries
    exhausted before a claim). False if it had already finished or is gone."""
    changed = Job.objects.filter(pk=job_pk, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).update(
        status=Job.Status.FAILED, error=error[:_ERROR_MAX_CHARS], finished_at=timezone.now()
    )
    return bool(changed)


def jobs_reap_abandoned(*, now: datetime | None = None) -> dict[str, int]:
    """Fail jobs no worker will ever finish: running past CAIRN_JOB_ABANDONED_AFTER_SECONDS (the worker
    died and no redelivery took the job over) or queued past CAIRN_JOB_QUEUED_TIMEOUT_SECONDS (the message
    never reached a worker). Idempotent: a second run finds nothing left."""
    now = now or timezone.now()
    running_cutoff = now - timedelta(seconds=settings.CAIRN_JOB_ABANDONED_AFTER_SECONDS)
    queued_cutoff = now - timedelta(seconds=settings.CAIRN_JOB_QUEUED_TIMEOUT_SECONDS)
    running = Job.objects.filter(status=Job.Status.RUNNING, started_at__lt=running_cutoff).update(
        status=Job.Status.FAILED,
        finished_at=now,
        error=(
            "Abandoned: its worker stopped without finishing it and no redelivery took it over within "
            f"{settings.CAIRN_JOB_ABANDONED_AFTER_SECONDS} s."
        ),
    )
    queued = Job.objects.filter(status=Job.Status.QUEUED, created_at__lt=queued_cutoff).update(
        status=Job.Status.FAILED,
        finished_at=now,
        error=f"Never started: no worker picked it up within {settings.CAIRN_JOB_QUEUED_TIMEOUT_SECONDS} s.",
    )
    if running or queued:
        logger.warning("reaped %s abandoned running and %s stale queued jobs", running, queued)
    return {"running": running, "queued": queued}
