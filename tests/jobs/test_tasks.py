"""The Celery tasks, run in-process (eager): thin, idempotent, retrying only transient errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from celery.exceptions import TimeLimitExceeded
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from checkpoints import tasks
from checkpoints.models import AuditEvent, Checkpoint, Job, StoredValue, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_expire
from checkpoints.services.jobs import job_claim
from project.celery import app as celery_app
from tests.factories import make_checkpoint
from tests.jobs import worker_tasks

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager")]

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def eager() -> Any:
    with override_settings(CELERY_TASK_ALWAYS_EAGER=True):
        yield


def test_it_schedules_every_beat_task_by_name() -> None:
    scheduled = {entry["task"] for entry in celery_app.conf.beat_schedule.values()}
    assert scheduled == {
        "checkpoints.tasks.sweep_expired_checkpoints",
        "checkpoints.tasks.sweep_expired_store_items",
        "checkpoints.tasks.purge_tombstones",
        "checkpoints.tasks.expire_idle_threads",
        "checkpoints.tasks.reap_abandoned_jobs",
        "checkpoints.tasks.collect_values",
    }
    assert scheduled <= set(celery_app.tasks)


def test_tasks_keep_the_names_queued_messages_and_the_schedule_use() -> None:
    registered = {
        tasks.retention_sweep_beat: "sweep_expired_checkpoints",
        tasks.store_sweep_expired_beat: "sweep_expired_store_items",
        tasks.tombstones_purge_beat: "purge_tombstones",
        tasks.threads_expire_idle_beat: "expire_idle_threads",
        tasks.jobs_reap_abandoned_beat: "reap_abandoned_jobs",
        tasks.values_collect_all_beat: "collect_values",
        tasks.retention_sweep_job: "run_sweep_job",
        tasks.medallion_checkpoint_job: "medallion_checkpoint_job",
        tasks.medallion_summarize_thread_job: "summarize_thread_job",
    }
    for task, name in registered.items():
        assert task.name == f"checkpoints.tasks.{name}"
        assert celery_app.tasks[task.name] == task  # the same task (`task` is a proxy to it)


def test_it_declares_late_acks_and_bounded_retries_on_transient_errors_only() -> None:
    names = (
        "retention_sweep_beat",
        "tombstones_purge_beat",
        "threads_expire_idle_beat",
        "values_collect_all_beat",
        "retention_sweep_job",
    )
    for name in names:
        task = getattr(tasks, name)
        assert task.acks_late is True
        assert task.max_retries == tasks.MAX_RETRIES
        assert task.retry_backoff is True and task.retry_jitter is True
        assert set(task.autoretry_for) == {*tasks.TRANSIENT_ERRORS}
        assert Exception not in task.autoretry_for


def test_it_runs_each_beat_task_twice_with_the_same_result_as_once(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    Workspace.objects.filter(pk=workspace.pk).update(
        tombstone_retention_seconds=60, thread_idle_ttl_seconds=3600
    )
    time_machine.move_to(T0, tick=False)
    make_checkpoint(workspace, "idle")
    checkpoint_expire(checkpoint=make_checkpoint(workspace, "busy"), actor=Actor.system("test"))
    time_machine.move_to(T0 + timedelta(minutes=59), tick=False)
    make_checkpoint(workspace, "busy", ttl_seconds=30)
    time_machine.move_to(T0 + timedelta(hours=1), tick=False)

    assert tasks.retention_sweep_beat.apply().get() == {"expired": 1, "pruned": 0, "workspaces": 1}
    assert tasks.retention_sweep_beat.apply().get() == {"expired": 0, "pruned": 0, "workspaces": 0}
    # The old tombstone; not the one just swept (it expired 30 s ago, the retention is 60 s).
    assert tasks.tombstones_purge_beat.apply().get() == 1
    assert tasks.tombstones_purge_beat.apply().get() == 0
    assert tasks.threads_expire_idle_beat.apply().get() == 1
    assert tasks.threads_expire_idle_beat.apply().get() == 0
    assert set(Thread.objects.values_list("thread_id", flat=True)) == {"busy"}
    assert tasks.jobs_reap_abandoned_beat.apply().get() == {"running": 0, "queued": 0}


def test_the_value_collector_frees_what_a_deleted_thread_named_once(workspace: Workspace) -> None:
    messages = [{"role": "user", "content": "word " * 60, "n": n} for n in range(40)]
    checkpoint = make_checkpoint(workspace, "chat", state={"messages": messages})
    assert StoredValue.objects.count() > 1
    checkpoint.thread.delete()
    later = timezone.now() + timedelta(seconds=settings.CAIRN_VALUE_GRACE_SECONDS + 1)
    with time_machine.travel(later, tick=False):
        freed = tasks.values_collect_all_beat.apply().get()
        assert freed["values"] > 1 and not StoredValue.objects.exists()
        assert tasks.values_collect_all_beat.apply().get() == {"values": 0, "bytes": 0}


def test_it_runs_a_sweep_job_once_when_the_task_is_delivered_twice(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    make_checkpoint(workspace, "t1", ttl_seconds=1)
    time_machine.move_to(T0 + timedelta(seconds=2), tick=False)
    job = Job.objects.create(workspace=workspace, kind=Job.Kind.SWEEP, params={})
    tasks.retention_sweep_job.apply(args=(job.pk,))
    tasks.retention_sweep_job.apply(args=(job.pk,))
    done = Job.objects.get(pk=job.pk)
    assert (done.status, done.attempts) == (Job.Status.SUCCEEDED, 1)
    assert done.result == {"expired": 1, "pruned": 0, "workspaces": 1}
    assert AuditEvent.objects.filter(action="retention.sweep").count() == 1


def test_it_treats_a_missing_job_as_a_no_op() -> None:
    assert tasks.retention_sweep_job.apply(args=(424242,)).successful()


def test_it_retries_a_transient_error_and_then_succeeds(workspace: Workspace) -> None:
    job = Job.objects.create(workspace=workspace, kind=Job.Kind.SUMMARIZE, params={"failures": 2})
    worker_tasks.flaky_job.apply(args=(job.pk,))
    done = Job.objects.get(pk=job.pk)
    assert (done.status, done.attempts, done.result) == (Job.Status.SUCCEEDED, 3, {"succeeded_on_attempt": 3})


def test_it_fails_the_job_when_the_retries_run_out(workspace: Workspace) -> None:
    job = Job.objects.create(workspace=workspace, kind=Job.Kind.SUMMARIZE, params={"failures": 99})
    worker_tasks.flaky_job.apply(args=(job.pk,))
    failed = Job.objects.get(pk=job.pk)
    assert failed.status == Job.Status.FAILED
    assert failed.attempts == tasks.MAX_RETRIES + 1
    assert failed.error == (
        f"ConnectionError: peer unreachable (attempt {tasks.MAX_RETRIES + 1}) "
        f"(gave up after {tasks.MAX_RETRIES + 1} attempts)"
    )


def test_it_fails_the_job_of_a_task_killed_by_the_hard_time_limit(workspace: Workspace) -> None:
    job = Job.objects.create(workspace=workspace, kind=Job.Kind.SUMMARIZE, params={})
    job_claim(job.pk)
    # What the worker's main process calls when it kills a task at the hard limit (celery.worker.request).
    tasks.retention_sweep_job.on_failure(TimeLimitExceeded(600), "task-id", (job.pk,), {}, None)
    failed = Job.objects.get(pk=job.pk)
    assert failed.status == Job.Status.FAILED
    assert failed.error == "The task failed: killed at the hard time limit (600 s)"


def test_it_keeps_checkpoints_the_sweep_must_not_touch(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    kept = make_checkpoint(workspace, "t1", ttl_seconds=10)
    time_machine.move_to(T0 + timedelta(seconds=9), tick=False)
    tasks.retention_sweep_beat.apply()
    assert Checkpoint.objects.get(pk=kept.pk).expired_at is None
