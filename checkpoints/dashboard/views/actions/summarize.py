"""Summarise a thread into its medallion now, as a tracked job."""

from __future__ import annotations

from django import forms
from django.http import HttpResponse

from checkpoints.dashboard.access import actor_for
from checkpoints.dashboard.views.actions.threads import ThreadAction
from checkpoints.models import Thread, Workspace
from checkpoints.services.medallion_summaries import thread_summarize_submit


class ThreadSummarizeAction(ThreadAction):
    title = "Summarise this thread now"
    button = "Summarise"

    def explanation(self, target: Thread) -> str:
        return (
            "The messages since the last summary are summarised into the thread's medallion, as a background "
            "job. The job appears on the thread page."
        )

    def perform(self, workspace: Workspace, target: Thread, form: forms.Form) -> HttpResponse:
        job = thread_summarize_submit(thread=target, actor=actor_for(self.request))
        return self.done(workspace, target, f"Summary job {job.job_id} queued.")
