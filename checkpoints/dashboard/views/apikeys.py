"""The API keys of a workspace: list, create (the secret is shown once), revoke."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from checkpoints.dashboard.access import workspace_view
from checkpoints.dashboard.paging import DashboardPage
from checkpoints.models import ApiKey, Workspace


@workspace_view
def api_key_list(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    page = DashboardPage(request, ApiKey.objects.filter(workspace=workspace), ["-id"])
    context = {"workspace": workspace, "title": "API keys", "nav": "keys", "page": page}
    return render(request, "checkpoints/dashboard/api_key_list.html", context)
