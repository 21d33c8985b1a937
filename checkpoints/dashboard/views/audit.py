"""The audit log and the job list of a workspace."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from checkpoints.dashboard.access import workspace_view
from checkpoints.dashboard.forms import AuditFilterForm, JobFilterForm
from checkpoints.dashboard.paging import DashboardPage
from checkpoints.models import AuditEvent, Job, Workspace


@workspace_view
def audit_log(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    form = AuditFilterForm(request.GET)
    page = None
    if form.is_valid():
        queryset = form.apply(AuditEvent.objects.for_workspace(workspace))
        page = DashboardPage(request, queryset, ["-id"])
    context = {"workspace": workspace, "title": "Audit log", "nav": "audit", "form": form, "page": page}
    return render(request, "checkpoints/dashboard/audit_log.html", context)


@workspace_view
def job_list(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    form = JobFilterForm(request.GET)
    page = None
    if form.is_valid():
        page = DashboardPage(request, form.apply(Job.objects.for_workspace(workspace)), ["-id"])
    context = {"workspace": workspace, "title": "Jobs", "nav": "jobs", "form": form, "page": page}
    return render(request, "checkpoints/dashboard/job_list.html", context)
