"""The thread list (filters, sorting, keyset pages) and the thread page (tree, messages, medallions, jobs)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from checkpoints.dashboard.access import workspace_view
from checkpoints.dashboard.action_forms import AnnotationForm
from checkpoints.dashboard.activity import thread_sparkline
from checkpoints.dashboard.forms import MessageSearchForm, ThreadFilterForm
from checkpoints.dashboard.paging import DashboardPage
from checkpoints.dashboard.queries import LogicalAndStored, threads_for_list
from checkpoints.dashboard.steps import step_summaries
from checkpoints.dashboard.tree import build_trees
from checkpoints.models import Checkpoint, Job, Medallion, Message, Thread, Workspace
from checkpoints.services.annotations import thread_annotations
from checkpoints.services.idle_expiry import thread_with_idle_expiry
from checkpoints.services.medallion_summaries import thread_scope
from checkpoints.services.search import messages_matching
from checkpoints.services.thread_storage import thread_storage

# The tree shows a thread's newest checkpoints; older ones stay reachable from the timeline in the admin.
TREE_CAP = 1_000
# The thread page shows its newest findings; all of them are in the API and the audit log.
ANNOTATIONS_SHOWN = 50


@workspace_view
def thread_list(request: HttpRequest, workspace: Workspace) -> HttpResponse:
    form = ThreadFilterForm(request.GET)
    page = None
    if form.is_valid():
        queryset = form.apply(threads_for_list(workspace, timezone.now()))
        page = DashboardPage(request, queryset, form.keyset())
    context = {"workspace": workspace, "title": "Threads", "nav": "threads", "form": form, "page": page}
    return render(request, "checkpoints/dashboard/thread_list.html", context)


def _messages(request: HttpRequest, thread: Thread, form: MessageSearchForm) -> DashboardPage | None:
    if not form.is_valid():
        return None
    queryset = Message.objects.filter(thread=thread).defer("search_text")
    if form.cleaned_data.get("role"):
        queryset = queryset.filter(role=form.cleaned_data["role"])
    if form.cleaned_data.get("search"):
        queryset = messages_matching(queryset, form.cleaned_data["search"])
    return DashboardPage(request, queryset, ["seq"])


@workspace_view
def thread_detail(request: HttpRequest, workspace: Workspace, thread_id: str) -> HttpResponse:
    thread = thread_with_idle_expiry(workspace=workspace, thread_id=thread_id)
    now = timezone.now()
    checkpoints = list(
        Checkpoint.objects.filter(thread=thread).without_payload().newest_first()[: TREE_CAP + 1]
    )
    forks = list(Thread.objects.filter(forked_from=thread).order_by("id")[:200])
    form = MessageSearchForm(request.GET)
    storage = thread_storage(thread=thread)
    totals = storage["totals"]
    context = {
        "workspace": workspace,
        "title": thread.name or thread.thread_id,
        "nav": "threads",
        "thread": thread,
        "forked_from": thread.forked_from if thread.forked_from_id else None,
        "trees": build_trees(
            checkpoints[:TREE_CAP], forks, now, steps=step_summaries(checkpoints[:TREE_CAP])
        ),
        "tree_truncated": len(checkpoints) > TREE_CAP,
        "tree_cap": TREE_CAP,
        "forks": forks,
        "message_form": form,
        "messages_page": _messages(request, thread, form),
        "storage": storage,
        "sizes": LogicalAndStored(totals["bytes"], totals["stored_bytes"]),
        "state_sizes": LogicalAndStored(totals["state_bytes"], totals["state_stored_bytes"]),
        "sparkline": thread_sparkline(thread, now),
        "scope_missing": thread_scope(thread).is_empty,
        # Counters on the row: no query. A summary needs a message after the last one summarised.
        "nothing_to_summarise": thread.last_message_seq <= thread.last_summarized_seq,
        "annotations": list(thread_annotations(thread=thread)[:ANNOTATIONS_SHOWN]),
        "annotation_form": AnnotationForm(),
        "medallions": list(Medallion.objects.filter(source_thread=thread).newest_first()[:20]),
        "jobs": list(
            Job.objects.for_workspace(workspace)
            .filter(params__thread_id=thread.thread_id)
            .newest_first()[:20]
        ),
    }
    return render(request, "checkpoints/dashboard/thread_detail.html", context)
