"""Search everything in a workspace: messages by their words, checkpoints by agent, step name and metadata."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from checkpoints.dashboard.access import workspace_view
from checkpoints.dashboard.paging import DashboardPage
from checkpoints.dashboard.queries import CappedCount, capped_count
from checkpoints.dashboard.search import SearchForm, highlight, message_text
from checkpoints.dashboard.writers import writer_names
from checkpoints.models import Workspace


@workspace_view
def search(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    form = SearchForm(request.GET)
    page: DashboardPage | None = None
    found: CappedCount | None = None
    hits: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    if form.is_valid():
        if form.chosen_kind == "checkpoints":
            checkpoints = form.checkpoints(workspace)
            page, found = DashboardPage(request, checkpoints, ["-id"]), capped_count(checkpoints)
            names = writer_names(workspace, [c.written_by for c in page])
        else:
            messages = form.messages(workspace)
            if messages is not None:
                page, found = DashboardPage(request, messages, ["-id"]), capped_count(messages)
                query = form.cleaned_data["q"]
                hits = [{"message": m, "snippet": highlight(message_text(m), query)} for m in page]
    tabs = {kind: _tab_query(request, kind) for kind in SearchForm.KINDS}
    context = {
        "workspace": workspace,
        "title": "Search",
        "nav": "search",
        "form": form,
        "kind": form.chosen_kind,
        "kinds": SearchForm.KINDS,
        "tabs": tabs,
        "page": page,
        "found": found,
        "hits": hits,
        "writer_names": names,
    }
    return render(request, "checkpoints/dashboard/search.html", context)


def _tab_query(request: HttpRequest, kind: str) -> str:
    """The current search in the other tab (same filters, first page)."""
    query = request.GET.copy()
    query.pop("cursor", None)
    query["kind"] = kind
    return query.urlencode()
