"""The retention page: the workspace's policy, a dry-run preview of the next sweep, recent sweep jobs."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from checkpoints.dashboard.access import workspace_view
from checkpoints.models import Job, Workspace
from checkpoints.services.retention import retention_preview

# The preview's rules, in the order the sweep and its companions apply them.
PREVIEW_RULES = [
    ("expired", "Expired checkpoints to tombstone"),
    ("pruned", "Checkpoints beyond keep-latest to tombstone"),
    ("purged", "Old tombstones to delete"),
    ("idle_threads", "Idle threads to delete"),
    ("store_items", "Expired store items to delete"),
]


@workspace_view
def retention(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    preview = retention_preview(workspace=workspace, now=timezone.now())
    context = {
        "workspace": workspace,
        "title": "Retention",
        "nav": "retention",
        "preview": preview,
        "preview_rows": [(label, preview[key]) for key, label in PREVIEW_RULES],
        "sweeps": list(Job.objects.for_workspace(workspace).filter(kind=Job.Kind.SWEEP).newest_first()[:10]),
    }
    return render(request, "checkpoints/dashboard/retention.html", context)
