"""Job submission, claiming, execution and reaping (services/jobs.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.db import OperationalError, transaction
from django.test import override_settings

from checkpoints.exceptions import Unavailable
from checkpoints.models import Job, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.jobs import (
    job_actor,
    job_claim,
    job_execute,
    job_fail_unfinished,
    job_finish,
    job_submit,
    jobs_reap_abandoned,
)
from tests.jobs import worker_tasks
from tests.jobs.helpers import broker_down

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def new_job(workspace: Workspace, **params: Any) -> Job:
    return Job.objects.create(workspace=workspace, kind=Job.Kind.SWEEP, params=params)


def counting(
    calls: list[int], result: dict[str, Any] | None = None
) -> Callable[[Job], dict[str, Any] | None]:
    def handler(job: Job) -> dict[str, Any] | None:
        calls.append(job.pk)
        return result

    return handler


@pytest.mark.django_db
def test_it_queues_the_job_in_the_transaction_and_publishes_it_after_commit(
    workspace: Workspace, django_capture_on_commit_callbacks: Any
) -> None:
    with override_settings(CELERY_TASK_ALWAYS_EAGER=True), django_capture_on_commit_callbacks(execute=True):
        job = job_submit(
            workspace=workspace,
            kind=Job.Kind.SUMMARIZE,
            params={"reason": "x"},
            task=worker_tasks.failing_job.name,
            actor=Actor.system("tester"),
        )
        queued = Job.objects.get(pk=job.pk)
        assert (queued.status, queued.attempts, queued.celery_task_id) == (Job.Status.QUEUED, 0, "")
    ran = Job.objects.get(pk=job.pk)
    assert ran.status == Job.Status.FAILED
    assert ran.error == "RuntimeError: boom: x"
    assert ran.celery_task_id  # recorded after publishing
    assert job_actor(ran) == Actor.system("tester")


@pytest.mark.django_db(transaction=True)
def test_it_withdraws_the_job_and_answers_unavailable_when_the_broker_is_down(workspace: Workspace) -> None:
    with broker_down(), pytest.raises(Unavailable), transaction.atomic():
        job_submit(workspace=workspace, kind=Job.Kind.SWEEP, params={}, task=worker_tasks.gated_job.name)
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_it_lets_exactly_one_of_two_deliveries_claim_a_job(workspace: Workspace) -> None:
    job = new_job(workspace)
    first, second = job_claim(job.pk), job_claim(job.pk)
    assert first is not None and second is None
    assert (first.status, first.attempts) == (Job.Status.RUNNING, 1)


@pytest.mark.django_db
def test_it_does_the_work_of_a_job_delivered_twice_once(workspace: Workspace) -> None:
    job = new_job(workspace)
    calls: list[int] = []
    assert job_execute(job.pk, counting(calls, {"n": 1})) is not None
    assert job_execute(job.pk, counting(calls, {"n": 2})) is None
    done = Job.objects.get(pk=job.pk)
    assert calls == [job.pk]
    assert (done.status, done.result, done.attempts) == (Job.Status.SUCCEEDED, {"n": 1}, 1)
    assert (
        done.started_at is not None and done.finished_at is not None and done.finished_at >= done.started_at
    )


@pytest.mark.django_db
def test_it_treats_a_missing_job_as_a_no_op() -> None:
    calls: list[int] = []
    assert job_execute(987654, counting(calls)) is None
    assert calls == []


@pytest.mark.django_db
@override_settings(CELERY_TASK_TIME_LIMIT=600)
def test_it_takes_over_a_running_job_only_after_the_time_limit(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    job = new_job(workspace)
    assert job_claim(job.pk) is not None  # its worker then dies
    time_machine.move_to(T0 + timedelta(seconds=659), tick=False)
    assert job_claim(job.pk) is None  # might still be running
    time_machine.move_to(T0 + timedelta(seconds=661), tick=False)
    taken = job_claim(job.pk)
    assert taken is not None and taken.attempts == 2 and taken.started_at == T0 + timedelta(seconds=661)


@pytest.mark.django_db
def test_it_records_a_failure_with_its_error(workspace: Workspace) -> None:
    job = new_job(workspace)

    def broken(job: Job) -> dict[str, Any]:
        raise ValueError("the scope is empty")

    job_execute(job.pk, broken)
    failed = Job.objects.get(pk=job.pk)
    assert (failed.status, failed.error, failed.result) == (
        Job.Status.FAILED,
        "ValueError: the scope is empty",
        None,
    )
    assert failed.finished_at is not None


@pytest.mark.django_db
def test_it_requeues_on_a_transient_error_and_gives_up_on_the_last_attempt(workspace: Workspace) -> None:
    job = new_job(workspace)

    def unreachable(job: Job) -> dict[str, Any]:
        raise OperationalError("server closed the connection unexpectedly")

    with pytest.raises(OperationalError):
        job_execute(job.pk, unreachable)
    assert Job.objects.get(pk=job.pk).status == Job.Status.QUEUED  # the task's retry can claim it again

    job_execute(job.pk, unreachable, retryable=False)
    failed = Job.objects.get(pk=job.pk)
    assert failed.status == Job.Status.FAILED
    assert (
        failed.error
        == "OperationalError: server closed the connection unexpectedly (gave up after 2 attempts)"
    )


@pytest.mark.django_db
def test_it_never_overwrites_the_outcome_of_a_finished_job(workspace: Workspace) -> None:
    job = new_job(workspace)
    job_execute(job.pk, counting([], {"first": True}))
    assert not job_finish(job, status=Job.Status.FAILED, error="late")
    assert not job_fail_unfinished(job_pk=job.pk, error="late")
    assert Job.objects.get(pk=job.pk).result == {"first": True}


@pytest.mark.django_db
@override_settings(CAIRN_JOB_ABANDONED_AFTER_SECONDS=1800, CAIRN_JOB_QUEUED_TIMEOUT_SECONDS=86400)
def test_it_reaps_abandoned_running_and_never_started_queued_jobs_once(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    abandoned, stale_queued = new_job(workspace), new_job(workspace)
    job_claim(abandoned.pk)
    time_machine.move_to(T0 + timedelta(seconds=1700), tick=False)
    recent_running, recent_queued = new_job(workspace), new_job(workspace)
    job_claim(recent_running.pk)

    time_machine.move_to(T0 + timedelta(seconds=1800), tick=False)
    assert jobs_reap_abandoned() == {"running": 0, "queued": 0}  # not *past* the limit yet
    time_machine.move_to(T0 + timedelta(seconds=1801), tick=False)
    assert jobs_reap_abandoned() == {"running": 1, "queued": 0}
    time_machine.move_to(T0 + timedelta(days=1, seconds=1), tick=False)
    assert jobs_reap_abandoned() == {"running": 1, "queued": 1}
    assert jobs_reap_abandoned() == {"running": 0, "queued": 0}

    statuses = {j.pk: (j.status, j.error) for j in Job.objects.all()}
    assert statuses[abandoned.pk][0] == Job.Status.FAILED
    assert statuses[abandoned.pk][1].startswith("Abandoned: its worker stopped")
    assert statuses[stale_queued.pk][1].startswith("Never started")
    assert statuses[recent_running.pk][0] == Job.Status.FAILED  # reaped by the third run
    assert statuses[recent_queued.pk][0] == Job.Status.QUEUED  # queued for less than a day
