"""Celery tasks: thin on purpose. Each takes a Job primary key (or nothing, for beat tasks) and calls one
service; the services hold every rule.

All tasks:
- are idempotent by construction: job tasks claim their Job with a conditional UPDATE (`job_claim`), so a
  message delivered twice does its work once; the beat tasks select only what is still to do;
- acknowledge late (`acks_late`): a worker killed mid-task leaves the message to be delivered again;
- retry only the named transient errors (`TRANSIENT_ERRORS`: database or network briefly unreachable),
  at most MAX_RETRIES times, with exponential backoff and full jitter;
- run under the soft/hard time limits of settings (CELERY_TASK_SOFT_TIME_LIMIT / CELERY_TASK_TIME_LIMIT);
- treat a missing row as a no-op, and take and return JSON only.

Each task is named after the one service it runs, with `_beat` (run by the beat schedule, every workspace)
or `_job` (runs one Job). The names they are registered under are older and stay as they are: queued
messages and the beat schedule (`CELERY_BEAT_SCHEDULE`) name them.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task
from celery.exceptions import TimeLimitExceeded

from checkpoints.exceptions import Unavailable
from checkpoints.services.checkpoint_packing import checkpoints_pack_for_job
from checkpoints.services.embedding import store_item_embed
from checkpoints.services.jobs import TRANSIENT_ERRORS, job_execute, job_fail_unfinished, jobs_reap_abandoned
from checkpoints.services.medallion_summaries import medallion_summarize_thread
from checkpoints.services.medallion_vectors import medallion_embed
from checkpoints.services.medallions import medallion_checkpoint
from checkpoints.services.retention import (
    retention_sweep,
    retention_sweep_for_job,
    threads_expire_idle,
    tombstones_purge,
)
from checkpoints.services.store import store_sweep_expired
from checkpoints.storage.stored_values import values_collect_all

logger = logging.getLogger(__name__)

MAX_RETRIES = 5

RETRY_POLICY: dict[str, Any] = {
    "acks_late": True,
    "autoretry_for": TRANSIENT_ERRORS,
    "max_retries": MAX_RETRIES,
    "retry_backoff": True,
    "retry_backoff_max": 300,
    "retry_jitter": True,
}


class JobTask(Task):
    """Base of tasks that run a Job. When the task itself dies outside `job_execute` (the hard time limit
    kills it, or its retries run out before a claim), the job is failed with the reason instead of being left
    queued or running."""

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        job_pk = args[0] if args else kwargs.get("job_pk")
        if isinstance(job_pk, int):
            if isinstance(exc, TimeLimitExceeded):
                reason = f"killed at the hard time limit ({exc.args[0] if exc.args else '?'} s)"
            else:
                reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if job_fail_unfinished(job_pk=job_pk, error=f"The task failed: {reason}"):
                logger.warning("job pk=%s failed by its task's failure: %s", job_pk, reason)


def registered_as(name: str, **options: Any) -> Any:
    """`shared_task` with the retry policy, registered under `checkpoints.tasks.<name>`."""
    return shared_task(name=f"{__name__}.{name}", **RETRY_POLICY, **options)


def is_last_attempt(task: Task) -> bool:
    """True on the delivery after which no retry will come (transient errors must then fail the job)."""
    return task.request.retries >= (task.max_retries or 0)


@registered_as("sweep_expired_checkpoints")
def retention_sweep_beat() -> dict[str, int]:
    """Beat, every minute: expired and beyond-keep-latest checkpoints become tombstones, all workspaces."""
    return retention_sweep()


@registered_as("sweep_expired_store_items")
def store_sweep_expired_beat() -> int:
    """Beat, every minute: delete expired store items, all workspaces (reads already ignore them)."""
    return store_sweep_expired()


@registered_as("purge_tombstones")
def tombstones_purge_beat() -> int:
    """Beat, hourly: hard-delete tombstones older than their workspace's tombstone retention."""
    return tombstones_purge()


@registered_as("expire_idle_threads")
def threads_expire_idle_beat() -> int:
    """Beat, hourly: delete threads whose idle expiry has passed."""
    return threads_expire_idle()


@registered_as("reap_abandoned_jobs")
def jobs_reap_abandoned_beat() -> dict[str, int]:
    """Beat, every 5 minutes: fail jobs whose worker died and that no redelivery took over."""
    return jobs_reap_abandoned()


@registered_as("collect_values")
def values_collect_all_beat() -> dict[str, int]:
    """Beat, hourly: delete packed checkpoints' parts that nothing names any more, all workspaces."""
    return values_collect_all()


@registered_as("pack_checkpoints_job", bind=True, base=JobTask)
def checkpoints_pack_job(self: Task, job_pk: int) -> None:
    """A conversion job: pack the job's workspace's checkpoints stored whole (docs/storage.md)."""
    job_execute(job_pk, checkpoints_pack_for_job, retryable=not is_last_attempt(self))


@registered_as("run_sweep_job", bind=True, base=JobTask)
def retention_sweep_job(self: Task, job_pk: int) -> None:
    """A "sweep now" job: the retention sweep of the job's workspace."""
    job_execute(job_pk, retention_sweep_for_job, retryable=not is_last_attempt(self))


@registered_as("medallion_checkpoint_job", bind=True, base=JobTask)
def medallion_checkpoint_job(self: Task, job_pk: int) -> None:
    """`checkpoint_session` as a job: create or update the medallion of the job's exact scope."""
    job_execute(job_pk, medallion_checkpoint, retryable=not is_last_attempt(self))


@registered_as("summarize_thread_job", bind=True, base=JobTask)
def medallion_summarize_thread_job(self: Task, job_pk: int) -> None:
    """Fold a thread's new messages into the medallion of the thread's scope."""
    job_execute(job_pk, medallion_summarize_thread, retryable=not is_last_attempt(self))


# An embeddings endpoint that fails answers Unavailable: worth the same bounded retries as a network error.
EMBEDDING_RETRY_POLICY = {**RETRY_POLICY, "autoretry_for": (*TRANSIENT_ERRORS, Unavailable)}


@shared_task(name=f"{__name__}.embed_store_item", **EMBEDDING_RETRY_POLICY)
def store_item_embed_task(item_pk: int, updated_at: str, index: list[str] | None) -> bool:
    """Compute a store item's vectors with a remote embedder, after its put committed (docs/store.md)."""
    return store_item_embed(item_pk=item_pk, updated_at=updated_at, index=index)


@shared_task(name=f"{__name__}.embed_medallion", **EMBEDDING_RETRY_POLICY)
def medallion_embed_task(medallion_pk: int, version: int) -> bool:
    """Compute the vector of one version of a medallion with a remote embedder (docs/medallions.md)."""
    return medallion_embed(medallion_pk=medallion_pk, version=version)
