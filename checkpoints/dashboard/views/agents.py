"""Handoffs between agents: who handed what to whom, when, from which checkpoint, and whether it was picked
up (see `checkpoints.dashboard.agents`)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from checkpoints.dashboard.access import workspace_view
from checkpoints.dashboard.agents import HandoffFilterForm, handoffs_for_list
from checkpoints.dashboard.paging import DashboardPage
from checkpoints.models import Workspace


@workspace_view
def handoff_list(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    form = HandoffFilterForm(request.GET)
    page = None
    if form.is_valid():
        page = DashboardPage(request, form.apply(handoffs_for_list(workspace), workspace), ["-id"])
    context = {"workspace": workspace, "title": "Handoffs", "nav": "handoffs", "form": form, "page": page}
    return render(request, "checkpoints/dashboard/handoffs.html", context)
