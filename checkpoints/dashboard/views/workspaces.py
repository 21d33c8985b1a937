"""The workspace list and a workspace's overview."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from checkpoints.dashboard.access import staff_view, user_workspaces, workspace_view
from checkpoints.dashboard.activity import DEFAULT_WINDOW, WINDOWS, activity_chart, storage_chart
from checkpoints.dashboard.forms import ChartWindowForm
from checkpoints.dashboard.queries import workspace_overview
from checkpoints.models import Workspace


@staff_view
def home(request: HttpRequest) -> HttpResponse:
    """Every workspace the user may open (memberships; superusers see all). With exactly one, the user
    lands on its overview: a list of one is a click for nothing."""
    workspaces = list(user_workspaces(request)[:500])
    if len(workspaces) == 1:
        return HttpResponseRedirect(reverse("dashboard:overview", args=[workspaces[0].slug]))
    return render(
        request, "checkpoints/dashboard/home.html", {"workspaces": workspaces, "title": "Workspaces"}
    )


@workspace_view
def overview(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    """Counts, storage, the activity and storage charts (the window the auditor picks), what expires
    soon, failed jobs and recent audit events. A window that is not one of WINDOWS is a 400."""
    now = timezone.now()
    form = ChartWindowForm(request.GET)
    facts = workspace_overview(workspace, now)
    charts = None
    if form.is_valid():
        window = WINDOWS[form.cleaned_data.get("window") or DEFAULT_WINDOW]
        charts = {
            "activity": activity_chart(workspace, window, now),
            "storage": storage_chart(workspace, now, held_now=facts["payloads"].logical),
        }
    context = {
        "workspace": workspace,
        "title": "Overview",
        "nav": "overview",
        "chart_form": form,
        "charts": charts,
        **facts,
    }
    return render(request, "checkpoints/dashboard/overview.html", context, status=200 if charts else 400)
