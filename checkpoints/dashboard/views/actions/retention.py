"""Run a retention sweep of the workspace now, as a tracked job."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import reverse

from checkpoints.dashboard.access import actor_for
from checkpoints.dashboard.views.actions.base import ConfirmAction
from checkpoints.models import Workspace
from checkpoints.services.retention import retention_sweep_submit


class SweepAction(ConfirmAction):
    title = "Run a retention sweep now"
    button = "Sweep now"
    danger = True

    def explanation(self, target: Workspace) -> str:
        return (
            "Expired checkpoints become tombstones and the workspace's retention rules are applied now, in a "
            "background job, exactly as the scheduled sweep would. The preview shows what it will do."
        )

    def cancel_url(self, workspace: Workspace, target: Any) -> str:
        return reverse("dashboard:retention", kwargs={"slug": workspace.slug})

    def perform(self, workspace: Workspace, target: Workspace, form: forms.Form) -> HttpResponse:
        job = retention_sweep_submit(workspace=workspace, actor=actor_for(self.request))
        self.success(f"Sweep job {job.job_id} queued.")
        return HttpResponseRedirect(self.cancel_url(workspace, target))
