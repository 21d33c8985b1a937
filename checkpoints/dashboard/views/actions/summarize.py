"""Summarise a thread into its medallion now, as a tracked job."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from checkpoints.dashboard.access import actor_for
from checkpoints.dashboard.views.actions.scope import THEN_SUMMARIZE
from checkpoints.dashboard.views.actions.threads import ThreadAction
from checkpoints.models import Thread, Workspace
from checkpoints.services.medallion_summaries import thread_scope, thread_summarize_submit


class ThreadSummarizeAction(ThreadAction):
    title = "Summarise this thread now"
    button = "Summarise"
    explanation_text = (
        "The messages since the last summary are summarised into the thread's medallion, as a background "
        "job. The job appears on the thread page."
    )

    def get(self, request: HttpRequest, workspace: Workspace, **kwargs: Any) -> HttpResponse:
        target = self.target(workspace, **kwargs)
        return self.scope_first(workspace, target) or self.render_page(
            workspace, target, self.make_form(target)
        )

    def post(self, request: HttpRequest, workspace: Workspace, **kwargs: Any) -> HttpResponse:
        return self.scope_first(workspace, self.target(workspace, **kwargs)) or super().post(
            request, workspace, **kwargs
        )

    def scope_first(self, workspace: Workspace, target: Thread) -> HttpResponse | None:
        """A thread without a scope has no medallion to summarise into: the scope form first, which comes
        back here once the scope is set (None when the thread has a scope)."""
        if not thread_scope(target).is_empty:
            return None
        url = reverse("dashboard:thread-scope", args=[workspace.slug, target.thread_id])
        return HttpResponseRedirect(f"{url}?then={THEN_SUMMARIZE}")

    def perform(self, workspace: Workspace, target: Thread, form: forms.Form) -> HttpResponse:
        job = thread_summarize_submit(thread=target, actor=actor_for(self.request))
        return self.done(workspace, target, f"Summary job {job.job_id} queued.")
