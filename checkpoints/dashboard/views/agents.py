"""Agents: the handoffs between them (who handed what to whom, when, from which checkpoint, and whether
it was taken: `checkpoints.services.handoffs`), and each agent's page (`dashboard.agent_activity`)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from checkpoints.dashboard.access import workspace_view
from checkpoints.dashboard.agent_activity import (
    THREADS_SHOWN,
    agent_charts,
    agent_checkpoints,
    agent_handoffs,
    agent_key_names,
    agent_threads,
)
from checkpoints.dashboard.agents import HandoffFilterForm, handoffs_for_list
from checkpoints.dashboard.paging import DashboardPage
from checkpoints.dashboard.queries import capped_count
from checkpoints.exceptions import NotFound
from checkpoints.models import Workspace


@workspace_view
def handoff_list(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    form = HandoffFilterForm(request.GET)
    page = None
    if form.is_valid():
        page = DashboardPage(request, form.apply(handoffs_for_list(workspace), workspace), ["-id"])
    context = {"workspace": workspace, "title": "Handoffs", "nav": "handoffs", "form": form, "page": page}
    return render(request, "checkpoints/dashboard/handoffs.html", context)


@workspace_view
def agent_detail(request: HttpRequest, workspace: Workspace, agent_id: str) -> HttpResponse:
    checkpoints = capped_count(agent_checkpoints(workspace, agent_id))
    handoffs = agent_handoffs(workspace, agent_id)
    if not checkpoints.value and not any(count.value for count in handoffs.values()):
        raise NotFound(f"No agent {agent_id!r} wrote or was handed anything in this workspace.")
    context = {
        "workspace": workspace,
        "title": f"Agent {agent_id}",
        "nav": "handoffs",
        "agent_id": agent_id,
        "checkpoints": checkpoints,
        "handoffs": handoffs,
        "threads": agent_threads(workspace, agent_id),
        "threads_shown": THREADS_SHOWN,
        "keys": agent_key_names(workspace, agent_id),
        "charts": agent_charts(workspace, agent_id, timezone.now()),
    }
    return render(request, "checkpoints/dashboard/agent.html", context)
