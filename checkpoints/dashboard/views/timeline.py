"""A thread's run timeline: messages and checkpoints interleaved in the order they happened."""

from __future__ import annotations

import re

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from checkpoints.dashboard.access import workspace_view
from checkpoints.dashboard.timeline import Position, start_at_checkpoint, start_at_message, timeline_page
from checkpoints.dashboard.views.checkpoints import client_id_param, namespace_param
from checkpoints.dashboard.writers import writer_names
from checkpoints.exceptions import ValidationFailed
from checkpoints.models import Workspace
from checkpoints.services.annotations import checkpoint_annotations
from checkpoints.services.checkpoint_reads import checkpoint_get, thread_get

_SEQ = re.compile(r"[0-9]{1,18}")


@workspace_view
def thread_timeline(request: HttpRequest, workspace: Workspace, thread_id: str) -> HttpResponse:
    """`?message=<seq>` or `?checkpoint=<id>&ns=` opens the page that starts there; `?cursor=` pages."""
    thread = thread_get(workspace=workspace, thread_id=thread_id)
    start: Position | None = None
    anchor = ""
    if "cursor" not in request.GET:
        raw_seq = request.GET.get("message")
        checkpoint_id = client_id_param(request, "checkpoint")
        if raw_seq:
            if not _SEQ.fullmatch(raw_seq) or int(raw_seq) < 1:
                raise ValidationFailed("message must be a message's seq (a whole number from 1).")
            seq = int(raw_seq)
            start, anchor = start_at_message(thread, seq), f"m-{seq}"
        elif checkpoint_id:
            checkpoint = checkpoint_get(
                workspace=workspace,
                thread_id=thread.thread_id,
                checkpoint_id=checkpoint_id,
                namespace=namespace_param(request),
            )
            start, anchor = start_at_checkpoint(checkpoint), f"c-{checkpoint.pk}"
    page = timeline_page(request, thread, start)
    # The page's badges: one query for the findings of all its checkpoints.
    found = checkpoint_annotations([e.checkpoint.pk for e in page.entries if e.checkpoint is not None])
    for entry in page.entries:
        if entry.checkpoint is not None:
            entry.annotations = found.get(entry.checkpoint.pk, [])
    context = {
        "workspace": workspace,
        "title": f"Timeline of {thread.thread_id}",
        "nav": "threads",
        "thread": thread,
        "page": page,
        "anchor": anchor,
        "latest": Position.end().encode(backwards=True),
        "writer_names": writer_names(
            workspace, [e.checkpoint.written_by for e in page.entries if e.checkpoint is not None]
        ),
    }
    return render(request, "checkpoints/dashboard/timeline.html", context)
