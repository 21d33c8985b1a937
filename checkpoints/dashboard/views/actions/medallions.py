"""Medallion actions: mark one stale (it no longer describes its scope; the scope is free for a new one)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import reverse

from checkpoints.dashboard.access import actor_for
from checkpoints.dashboard.views.actions.base import ConfirmAction
from checkpoints.models import Medallion, Workspace
from checkpoints.services.medallion_reads import medallion_get
from checkpoints.services.medallions import medallion_update


class MarkStaleAction(ConfirmAction):
    title = "Mark this medallion stale"
    button = "Mark stale"
    explanation_text = (
        "Medallion {target.medallion_id} becomes stale (a new version, audited as medallion.update): it is "
        "no longer served as the active summary of its scope, and a new summary of that scope can be made."
    )

    def target(self, workspace: Workspace, **kwargs: Any) -> Medallion:
        return medallion_get(workspace=workspace, medallion_id=kwargs["medallion_id"])

    def cancel_url(self, workspace: Workspace, target: Any) -> str:
        return reverse("dashboard:medallion", args=[workspace.slug, target.medallion_id])

    def perform(self, workspace: Workspace, target: Medallion, form: forms.Form) -> HttpResponse:
        medallion_update(
            medallion=target, changes={"status": Medallion.Status.STALE}, actor=actor_for(self.request)
        )
        self.success(f"Medallion {target.medallion_id} marked stale.")
        return HttpResponseRedirect(self.cancel_url(workspace, target))
