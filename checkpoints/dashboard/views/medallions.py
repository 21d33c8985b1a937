"""The medallion browser: by scope, with each medallion's revision history and diffs between revisions."""

from __future__ import annotations

import uuid

import jsonpatch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from checkpoints.dashboard.access import workspace_view
from checkpoints.dashboard.diffview import SideBySide, side_by_side
from checkpoints.dashboard.forms import MedallionFilterForm
from checkpoints.dashboard.jsonview import render_json
from checkpoints.dashboard.paging import DashboardPage
from checkpoints.exceptions import NotFound, ValidationFailed
from checkpoints.models import Medallion, MedallionRevision, Workspace
from checkpoints.numbers import parse_whole_number

REVISION_LIMIT = 200


@workspace_view
def medallion_list(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    data = request.GET.copy()
    # Browsing starts from what agents load: active medallions (clear the filter to see every status).
    data.setdefault("status", Medallion.Status.ACTIVE)
    form = MedallionFilterForm(data)
    page = None
    if form.is_valid():
        queryset = form.apply(Medallion.objects.for_workspace(workspace).select_related("source_thread"))
        page = DashboardPage(request, queryset, ["-updated_at", "-id"])
    context = {"workspace": workspace, "title": "Medallions", "nav": "medallions", "form": form, "page": page}
    return render(request, "checkpoints/dashboard/medallion_list.html", context)


def _medallion(workspace: Workspace, medallion_id: uuid.UUID) -> Medallion:
    medallion = (
        Medallion.objects.for_workspace(workspace)
        .select_related("source_thread")
        .filter(medallion_id=medallion_id)
        .first()
    )
    if medallion is None:
        raise NotFound("No such medallion in this workspace.")
    return medallion


def _version(request: HttpRequest, name: str) -> int | None:
    raw = request.GET.get(name, "")
    if not raw:
        return None
    version = parse_whole_number(raw)
    if version is None or not 0 <= version < 10**9:
        raise ValidationFailed(f"{name} must be a version number.")
    return version


def _revision_diff(
    request: HttpRequest, medallion: Medallion, latest: int | None
) -> tuple[int, int, SideBySide] | None:
    """The change between two versions: `?from=` and `?to=` (default: the latest and the one before)."""
    explicit = bool(request.GET.get("from") or request.GET.get("to"))
    newer = _version(request, "to") or latest
    if newer is None:
        return None
    older = _version(request, "from") or newer - 1
    pair = {
        revision.version: revision.content
        for revision in MedallionRevision.objects.filter(medallion=medallion, version__in=[older, newer])
    }
    if older not in pair or newer not in pair:
        if explicit:
            raise NotFound("No such revision of this medallion.")
        return None
    patch = jsonpatch.make_patch(pair[older], pair[newer]).patch
    return older, newer, side_by_side(pair[older], list(patch))


@workspace_view
def medallion_detail(request: HttpRequest, workspace: Workspace, medallion_id: uuid.UUID) -> HttpResponse:
    medallion = _medallion(workspace, medallion_id)
    revisions = list(
        MedallionRevision.objects.filter(medallion=medallion)
        .select_related("job")
        .order_by("-version")[:REVISION_LIMIT]
    )
    diff = _revision_diff(request, medallion, revisions[0].version if revisions else None)
    context = {
        "workspace": workspace,
        "title": "Medallion",
        "nav": "medallions",
        "medallion": medallion,
        "revisions": [
            (revision, render_json(revision.evidence, max_nodes=300) if revision.evidence else None)
            for revision in revisions
        ],
        "diff": diff[2] if diff else None,
        "diff_from": diff[0] if diff else None,
        "diff_to": diff[1] if diff else None,
    }
    return render(request, "checkpoints/dashboard/medallion_detail.html", context)
