"""The audit log of a workspace, and its CSV and JSON exports (same filters)."""

from __future__ import annotations

from collections.abc import Iterator

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render

from checkpoints.dashboard.access import actor_for, workspace_view
from checkpoints.dashboard.audit_export import EXPORT_MAX_ROWS, audit_csv, audit_json, export_filename
from checkpoints.dashboard.forms import AuditFilterForm
from checkpoints.dashboard.paging import DashboardPage
from checkpoints.dashboard.queries import with_agents
from checkpoints.models import AuditEvent, Workspace
from checkpoints.services.audit_reads import audit_export_record


def _filters_only(request: HttpRequest) -> str:
    """The query string without paging: an export holds every matching event, not the page shown."""
    query = request.GET.copy()
    for paging in ("cursor", "limit"):
        query.pop(paging, None)
    return query.urlencode()


def _page(
    request: HttpRequest, workspace: Workspace, form: AuditFilterForm, status: int = 200
) -> HttpResponse:
    page = None
    if form.is_valid():
        queryset = with_agents(form.apply(AuditEvent.objects.for_workspace(workspace)))
        page = DashboardPage(request, queryset, ["-id"])
    context = {
        "workspace": workspace,
        "title": "Audit log",
        "nav": "audit",
        "form": form,
        "page": page,
        "export_query": _filters_only(request),
        "export_limit": EXPORT_MAX_ROWS,
    }
    return render(request, "checkpoints/dashboard/audit_log.html", context, status=status)


@workspace_view
def audit_log(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    return _page(request, workspace, AuditFilterForm(request.GET))


def _export(
    request: HttpRequest, workspace: Workspace, extension: str, content_type: str
) -> HttpResponse | StreamingHttpResponse:
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return _page(request, workspace, form, status=400)
    queryset = form.apply(AuditEvent.objects.for_workspace(workspace))
    filters = {name: value for name, value in form.cleaned_data.items() if value not in (None, "")}
    # The export holds the events up to its own (recorded first, so a failing export is still seen).
    recorded = audit_export_record(
        workspace=workspace,
        actor=actor_for(request),
        extension=extension,
        filters={name: str(value) for name, value in filters.items()},
    )
    queryset = queryset.filter(pk__lt=recorded.pk)
    lines: Iterator[str] = audit_csv(queryset) if extension == "csv" else audit_json(queryset, filters)
    response = StreamingHttpResponse(lines, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{export_filename(workspace.slug, extension)}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


@workspace_view
def audit_export_csv(request: HttpRequest, workspace: Workspace) -> HttpResponse | StreamingHttpResponse:
    return _export(request, workspace, "csv", "text/csv; charset=utf-8")


@workspace_view
def audit_export_json(request: HttpRequest, workspace: Workspace) -> HttpResponse | StreamingHttpResponse:
    return _export(request, workspace, "json", "application/json")
