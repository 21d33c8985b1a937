"""The workspace list and a workspace's overview."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from checkpoints.dashboard.access import staff_view, user_workspaces, workspace_view
from checkpoints.dashboard.queries import workspace_overview
from checkpoints.models import Workspace


@staff_view
def home(request: HttpRequest) -> HttpResponse:
    """Every workspace the user may open (memberships; superusers see all)."""
    workspaces = list(user_workspaces(request)[:500])
    return render(
        request, "checkpoints/dashboard/home.html", {"workspaces": workspaces, "title": "Workspaces"}
    )


@workspace_view
def overview(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    context = {
        "workspace": workspace,
        "title": "Overview",
        "nav": "overview",
        **workspace_overview(workspace, timezone.now()),
    }
    return render(request, "checkpoints/dashboard/overview.html", context)
