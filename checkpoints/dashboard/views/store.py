"""The workspace's store (docs/store.md): its namespaces as a tree to walk down, the items under the chosen
namespace with their values and TTLs, a search box that ranks them by meaning with the score shown, and
the export of the live items as JSON.
Reading here never pushes an item's TTL back."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone

from checkpoints.dashboard.access import workspace_view
from checkpoints.exceptions import ValidationFailed
from checkpoints.integrity import format_timestamp
from checkpoints.models import Workspace
from checkpoints.models.store import NAMESPACE_SEPARATOR
from checkpoints.services.store import store_export, store_list_namespaces, store_search

PAGE_ITEMS = 50
TREE_WIDTH = 200


def _labels(text: str) -> list[str]:
    labels = [label for label in text.split(NAMESPACE_SEPARATOR) if label] if text else []
    if len(labels) > 64 or any("\x00" in label or len(label) > 255 for label in labels):
        raise ValidationFailed("That namespace cannot exist.")
    return labels


@workspace_view
def store(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    labels = _labels(request.GET.get("ns", "")[:2000])
    query = request.GET.get("q", "").strip()[:1000] or None
    if query and "\x00" in query:
        raise ValidationFailed("The search may not contain NUL characters.")
    children = store_list_namespaces(
        workspace=workspace, prefix=labels or None, max_depth=len(labels) + 1, limit=TREE_WIDTH
    )
    found = store_search(
        workspace=workspace, namespace_prefix=labels, query=query, limit=PAGE_ITEMS, refresh_ttl=False
    )
    crumbs = [
        {"label": label, "ns": NAMESPACE_SEPARATOR.join(labels[: depth + 1])}
        for depth, label in enumerate(labels)
    ]
    context = {
        "workspace": workspace,
        "title": "Store",
        "nav": "store",
        "crumbs": crumbs,
        "namespace": NAMESPACE_SEPARATOR.join(labels),
        "children": [
            {"label": child[-1], "ns": NAMESPACE_SEPARATOR.join(child)}
            for child in children
            if len(child) > len(labels)
        ],
        "query": query or "",
        "items": [{"item": item, "score": score} for item, score in found],
        "page_items": PAGE_ITEMS,
    }
    return render(request, "checkpoints/dashboard/store.html", context)


@workspace_view
def store_export_json(request: HttpRequest, workspace: Workspace) -> StreamingHttpResponse:
    """The live items under the chosen namespace (all of them by default) as one JSON download:
    `{"workspace", "namespace", "as_of", "items": [...]}`, written item by item."""
    labels = _labels(request.GET.get("ns", "")[:2000])
    now = timezone.now()

    def lines() -> Iterator[str]:
        head = {"workspace": workspace.slug, "namespace": labels, "as_of": format_timestamp(now)}
        yield json.dumps(head)[:-1] + ', "items": ['
        for count, item in enumerate(store_export(workspace=workspace, namespace_prefix=labels, now=now)):
            yield ("," if count else "") + "\n" + json.dumps(item, ensure_ascii=False)
        yield "]}\n"

    response = StreamingHttpResponse(lines(), content_type="application/json")
    filename = f"store-{workspace.slug}-{now:%Y%m%d-%H%M%S}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
