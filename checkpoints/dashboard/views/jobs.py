"""The jobs of a workspace: the list with the periodic schedule, and one job in full."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from checkpoints.dashboard.access import workspace_view
from checkpoints.dashboard.forms import JobFilterForm
from checkpoints.dashboard.paging import DashboardPage
from checkpoints.models import Job, Workspace
from checkpoints.services.jobs import job_actor, job_get, job_params


def _seconds(interval: Any) -> int | None:
    """A beat interval in whole seconds: a number, a timedelta or a celery `schedule`; None for a crontab."""
    if isinstance(interval, int | float):
        return round(interval)
    every = getattr(interval, "run_every", interval)
    return round(every.total_seconds()) if isinstance(every, timedelta) else None


def periodic_schedule() -> list[dict[str, Any]]:
    """The Celery beat schedule from the settings, in name order."""
    return [
        {
            "name": name,
            "task": entry["task"],
            "every_seconds": _seconds(entry["schedule"]),
            "schedule": str(entry["schedule"]),
        }
        for name, entry in sorted(settings.CELERY_BEAT_SCHEDULE.items())
    ]


@workspace_view
def job_list(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    form = JobFilterForm(request.GET)
    page = None
    if form.is_valid():
        page = DashboardPage(request, form.apply(Job.objects.for_workspace(workspace)), ["-id"])
    context = {
        "workspace": workspace,
        "title": "Jobs",
        "nav": "jobs",
        "form": form,
        "page": page,
        "schedule": periodic_schedule(),
    }
    return render(request, "checkpoints/dashboard/job_list.html", context)


def _duration(start: datetime | None, end: datetime | None) -> int | None:
    return round((end - start).total_seconds()) if start and end else None


def _thread_url(workspace: Workspace, thread_id: Any) -> str:
    """The page of the thread a job worked on (a summary), if it names one the URLs can carry."""
    if not isinstance(thread_id, str) or not thread_id:
        return ""
    try:
        return reverse("dashboard:thread", args=[workspace.slug, thread_id])
    except NoReverseMatch:
        return ""


@workspace_view
def job_detail(request: HttpRequest, workspace: Workspace, job_id: uuid.UUID) -> HttpResponse:
    job = job_get(workspace=workspace, job_id=job_id)
    context = {
        "workspace": workspace,
        "title": f"Job {job.job_id}",
        "nav": "jobs",
        "job": job,
        "requester": job_actor(job),
        "params": job_params(job),
        "thread_url": _thread_url(workspace, job_params(job).get("thread_id")),
        "waited_seconds": _duration(job.created_at, job.started_at),
        "ran_seconds": _duration(job.started_at, job.finished_at),
    }
    return render(request, "checkpoints/dashboard/job_detail.html", context)
