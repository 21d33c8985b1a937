"""A job's own page (kind, params, requester, attempts, timings, result or error), linked from the jobs list,
and the periodic schedule in human units."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from pytest_django.fixtures import Settings as SettingsWrapper

from checkpoints.models import Job
from checkpoints.services.audit import Actor
from checkpoints.services.jobs import job_params
from tests.dashboard.world import World

pytestmark = pytest.mark.django_db

# session + user + workspace + the job.
JOB_PAGE_QUERIES = 4


def job_url(world: World, job: Job) -> str:
    return reverse("dashboard:job", args=[world.workspace.slug, job.job_id])


def test_it_shows_a_finished_job_in_full(
    dash: Client, world: World, django_assert_num_queries: Callable[..., Any]
) -> None:
    created = timezone.now() - timedelta(minutes=5)
    job = Job.objects.create(
        workspace=world.workspace,
        kind=Job.Kind.SUMMARIZE,
        status=Job.Status.SUCCEEDED,
        params={"thread_id": "run-1", "requested_by": {"type": "user", "label": "user:alice", "user_id": 1}},
        result={"medallion_id": "m-1", "version": 3, "text": "x" * 400},
        attempts=2,
        created_at=created,
        started_at=created + timedelta(seconds=90),
        finished_at=created + timedelta(seconds=90 + 3_725),
        celery_task_id="celery-123",
    )
    with django_assert_num_queries(JOB_PAGE_QUERIES):
        html = dash.get(job_url(world, job)).content.decode()
    assert "user:alice" in html.split("data-job-requester>")[1].split("</dd>")[0]
    assert html.split("data-job-attempts>")[1].startswith("2<")
    assert "after 1 min 30 s queued" in html and "ran 1 h 2 min 5 s" in html
    params = html.split("data-job-params>")[1].split("</pre>")[0]
    assert "&quot;thread_id&quot;: &quot;run-1&quot;" in params and "requested_by" not in params
    assert "x" * 400 in html.split("data-job-result>")[1]  # the whole result, not cut
    assert 'href="/dashboard/w/acme/threads/run-1/"' in html and "celery-123" in html
    assert created.strftime("%Y-%m-%d %H:%M:%S") in html


def test_it_shows_a_failed_jobs_error_whole(dash: Client, world: World) -> None:
    job = Job.objects.get(workspace=world.workspace, status=Job.Status.FAILED)
    html = dash.get(job_url(world, job)).content.decode()
    assert "LLMError: the model returned invalid JSON" in html.split("data-job-error>")[1]
    assert "job:summarize" in html  # no requester recorded: the system, named by the kind
    assert "not yet" in html


def test_the_jobs_list_links_each_job(dash: Client, world: World) -> None:
    job = Job.objects.get(workspace=world.workspace)
    html = dash.get(reverse("dashboard:jobs", args=[world.workspace.slug])).content.decode()
    assert f'href="{job_url(world, job)}"' in html


def test_it_shows_the_periodic_schedule_in_human_units(
    dash: Client, world: World, settings: SettingsWrapper, django_assert_num_queries: Callable[..., Any]
) -> None:
    settings.CELERY_BEAT_SCHEDULE = {
        "retention-sweep": {"task": "checkpoints.tasks.sweep_expired_checkpoints", "schedule": 60.0},
        "tombstone-purge": {"task": "checkpoints.tasks.purge_tombstones", "schedule": timedelta(hours=1)},
        "nightly": {"task": "checkpoints.tasks.x", "schedule": 86_400 + 30},
    }
    with django_assert_num_queries(4):  # session + user + workspace + the page of jobs
        html = dash.get(reverse("dashboard:jobs", args=[world.workspace.slug])).content.decode()
    schedule = html.split('<table class="table schedule">')[1].split("</table>")[0]
    assert '<td data-every="60">1 min</td>' in schedule
    assert '<td data-every="3600">1 h</td>' in schedule
    assert '<td data-every="86430">1 day 30 s</td>' in schedule
    assert schedule.index("nightly") < schedule.index("retention-sweep") < schedule.index("tombstone-purge")


def test_a_job_of_another_workspace_or_none_is_a_404(
    dash: Client, world: World, other_workspace: Any
) -> None:
    theirs = Job.objects.create(workspace=other_workspace, kind=Job.Kind.SWEEP, params={"secret": "theirs"})
    for job_id in (theirs.job_id, uuid.uuid4()):
        response = dash.get(reverse("dashboard:job", args=[world.workspace.slug, job_id]))
        assert response.status_code == 404 and b"theirs" not in response.content


def test_job_params_leave_out_who_asked() -> None:
    job = Job(params={"thread_id": "t", "requested_by": Actor.system("x").__dict__})
    assert job_params(job) == {"thread_id": "t"}
    assert job_params(Job(params=["odd"])) == {"value": ["odd"]}
