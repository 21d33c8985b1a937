"""The checkpoint page (integrity badge, collapsible JSON, lineage), the raw download and the diff."""

from __future__ import annotations

import json
import re
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from checkpoints.dashboard.access import actor_for, workspace_view
from checkpoints.dashboard.action_forms import AnnotationForm
from checkpoints.dashboard.diffview import field_changes, is_langgraph_bookkeeping, side_by_side
from checkpoints.dashboard.jsonview import render_json_text
from checkpoints.dashboard.steps import step_summaries
from checkpoints.dashboard.timeline import neighbours
from checkpoints.dashboard.writers import writer_names
from checkpoints.exceptions import ValidationFailed
from checkpoints.models import Checkpoint, Thread, Workspace
from checkpoints.models.thread import CLIENT_ID_PATTERN
from checkpoints.services.audit_reads import checkpoint_diff_view_record, checkpoint_view_record
from checkpoints.services.checkpoint_reads import (
    checkpoint_diff,
    checkpoint_get,
    checkpoint_lineage,
    ensure_readable,
    pending_writes_for,
)
from checkpoints.services.checkpoints import checkpoint_verify

DOCUMENTS = ("state", "context", "metadata")
_CLIENT_ID = re.compile(CLIENT_ID_PATTERN)
LINEAGE_LIMIT = 50
DIFF_CHOICES_LIMIT = 200


def namespace_param(request: HttpRequest, name: str = "ns") -> str | None:
    """A namespace from the query string: None when absent (the id must then be unique in the thread)."""
    value = request.GET.get(name)
    if value is not None and (len(value) > 255 or "\x00" in value):
        raise ValidationFailed(f"{name} must be a namespace of at most 255 characters.")
    return value


def client_id_param(request: HttpRequest, name: str) -> str | None:
    """A thread or checkpoint id from the query string (None when absent or empty); 400 unless well-formed."""
    value = request.GET.get(name, "").strip()
    if not value:
        return None
    if not _CLIENT_ID.fullmatch(value):
        raise ValidationFailed(f"{name} is not a valid id (1-128 letters, digits, '.', '_', ':' or '-').")
    return value


def _checkpoint(request: HttpRequest, workspace: Workspace, thread_id: str, checkpoint_id: str) -> Checkpoint:
    return checkpoint_get(
        workspace=workspace,
        thread_id=thread_id,
        checkpoint_id=checkpoint_id,
        namespace=namespace_param(request),
    )


def integrity_status(checkpoint: Checkpoint) -> str:
    """ "verified" or "mismatch" (re-hashed now, on every view), or "erased" for a tombstone."""
    if checkpoint.state is None:
        return "erased"
    return "verified" if checkpoint_verify(checkpoint) else "mismatch"


@workspace_view
def checkpoint_detail(
    request: HttpRequest, workspace: Workspace, thread_id: str, checkpoint_id: str
) -> HttpResponse:
    checkpoint = _checkpoint(request, workspace, thread_id, checkpoint_id)
    thread = checkpoint.thread
    now = timezone.now()
    readable = checkpoint.is_readable(now)
    lineage, lineage_more = checkpoint_lineage(checkpoint=checkpoint, limit=LINEAGE_LIMIT)
    siblings = (
        Checkpoint.objects.filter(thread=thread).without_payload().exclude(pk=checkpoint.pk).newest_first()
    )
    previous_step, next_step = neighbours(checkpoint)
    # An expired checkpoint's actions are shown disabled; forking its nearest readable ancestor is the fix.
    fork_instead = None if readable else next((a for a in lineage if a.is_readable(now)), None)
    if readable:  # the page shows its state: who looked is recorded
        checkpoint_view_record(
            workspace=workspace, actor=actor_for(request), checkpoint=checkpoint, part="page"
        )
    context: dict[str, Any] = {
        "workspace": workspace,
        "title": f"Checkpoint {checkpoint.checkpoint_id}",
        "nav": "threads",
        "thread": thread,
        "checkpoint": checkpoint,
        "readable": readable,
        "expired_on": checkpoint.effective_expired_at(now),
        "fork_instead": fork_instead,
        "integrity": integrity_status(checkpoint),
        "documents": [
            (name, render_json_text(getattr(checkpoint, name)) if readable else None) for name in DOCUMENTS
        ],
        "previous_step": previous_step,
        "next_step": next_step,
        "step": step_summaries([checkpoint])[checkpoint.pk],
        "writer_names": writer_names(workspace, [checkpoint.written_by]),
        "lineage": lineage,
        "lineage_more": lineage_more,
        "children": list(
            siblings.filter(namespace=checkpoint.namespace, parent_checkpoint_id=checkpoint.checkpoint_id)[
                :50
            ]
        ),
        "forks": list(
            Thread.objects.filter(
                forked_from=thread,
                forked_from_checkpoint_id=checkpoint.checkpoint_id,
                forked_from_namespace=checkpoint.namespace,
            )[:50]
        ),
        "diff_choices": list(siblings[:DIFF_CHOICES_LIMIT]),
        "annotations": list(checkpoint.annotations.newest_first()),
        "annotation_form": AnnotationForm(),
        "pending_writes": pending_writes_for(
            thread=thread, namespace=checkpoint.namespace, checkpoint_id=checkpoint.checkpoint_id
        )[:100],
    }
    return render(request, "checkpoints/dashboard/checkpoint_detail.html", context)


@workspace_view
def checkpoint_raw(
    request: HttpRequest, workspace: Workspace, thread_id: str, checkpoint_id: str
) -> HttpResponse:
    """One stored document, byte for byte as it was hashed, as a download."""
    part = request.GET.get("part", "state")
    if part not in DOCUMENTS:
        raise ValidationFailed("part must be state, context or metadata.")
    checkpoint = _checkpoint(request, workspace, thread_id, checkpoint_id)
    ensure_readable(checkpoint)
    checkpoint_view_record(workspace=workspace, actor=actor_for(request), checkpoint=checkpoint, part=part)
    response = HttpResponse(getattr(checkpoint, part), content_type="application/json; charset=utf-8")
    filename = f"{checkpoint.thread.thread_id}-{checkpoint.checkpoint_id}-{part}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Checksum-Verified"] = "true" if checkpoint_verify(checkpoint) else "false"
    return response


def _diff_source(request: HttpRequest, workspace: Workspace, checkpoint: Checkpoint) -> Checkpoint | None:
    """The checkpoint to compare against: `?against=` (in `?against_thread=`, possibly another thread such
    as a fork's origin), else the parent, else nothing (a root is diffed against an empty document)."""
    against = client_id_param(request, "against")
    if against:
        return checkpoint_get(
            workspace=workspace,
            thread_id=client_id_param(request, "against_thread") or checkpoint.thread.thread_id,
            checkpoint_id=against,
            namespace=namespace_param(request, "against_ns"),
        )
    if checkpoint.parent_checkpoint_id is None:
        return None
    return checkpoint_get(
        workspace=workspace,
        thread_id=checkpoint.thread.thread_id,
        checkpoint_id=checkpoint.parent_checkpoint_id,
        namespace=checkpoint.namespace,
    )


@workspace_view
def checkpoint_diff_view(
    request: HttpRequest, workspace: Workspace, thread_id: str, checkpoint_id: str
) -> HttpResponse:
    checkpoint = _checkpoint(request, workspace, thread_id, checkpoint_id)
    source = _diff_source(request, workspace, checkpoint)
    patch = checkpoint_diff(checkpoint=checkpoint, against=source)
    checkpoint_diff_view_record(
        workspace=workspace, actor=actor_for(request), checkpoint=checkpoint, against=source
    )
    if request.GET.get("format") == "json":
        response = HttpResponse(json.dumps(patch, ensure_ascii=False), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{checkpoint.checkpoint_id}-diff.json"'
        return response
    document = {name: source.decoded(name) for name in DOCUMENTS} if source is not None else {}
    langgraph = Checkpoint.Framework.LANGGRAPH in (checkpoint.framework, source.framework if source else None)
    # LangGraph's bookkeeping is hidden unless `?bookkeeping=1` (a link, so it works without JavaScript).
    show_bookkeeping = request.GET.get("bookkeeping") == "1"
    toggle = request.GET.copy()
    toggle["bookkeeping"] = "0" if show_bookkeeping else "1"
    previous_step, next_step = neighbours(checkpoint)
    context = {
        "workspace": workspace,
        "title": f"Diff of {checkpoint.checkpoint_id}",
        "nav": "threads",
        "thread": checkpoint.thread,
        "checkpoint": checkpoint,
        "source": source,
        "diff": side_by_side(
            document, patch, hide=None if show_bookkeeping or not langgraph else is_langgraph_bookkeeping
        ),
        "langgraph": langgraph,
        "show_bookkeeping": show_bookkeeping,
        "bookkeeping_toggle": toggle.urlencode(),
        "previous_pair": previous_step,
        "next_pair": next_step,
        "field_changes": field_changes(source, checkpoint),
        "cross_thread": source is not None and source.thread_id != checkpoint.thread_id,
    }
    return render(request, "checkpoints/dashboard/checkpoint_diff.html", context)
