"""Findings from the dashboard: the form on the checkpoint and thread pages posts to these actions (GET shows
it on a page of its own); the annotation is recorded, audited, in the user's name and the page is shown
again (docs/dashboard.md, "Findings")."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpResponse, HttpResponseRedirect

from checkpoints.dashboard.access import actor_for
from checkpoints.dashboard.action_forms import AnnotationForm
from checkpoints.dashboard.views.actions.base import ConfirmAction
from checkpoints.dashboard.views.actions.checkpoints import CheckpointAction
from checkpoints.dashboard.views.actions.threads import ThreadAction
from checkpoints.models import Checkpoint, Workspace
from checkpoints.services.annotations import annotation_create


class AnnotateAction(ConfirmAction):
    """Record a finding on the target: a checkpoint, or a thread."""

    form_class = AnnotationForm
    title = "Record a finding"
    button = "Add finding"

    def perform(self, workspace: Workspace, target: Any, form: forms.Form) -> HttpResponse:
        checkpoint = target if isinstance(target, Checkpoint) else None
        annotation_create(
            thread=checkpoint.thread if checkpoint else target,
            actor=actor_for(self.request),
            comment=form.cleaned_data["comment"],
            verdict=form.cleaned_data["verdict"],
            checkpoint=checkpoint,
        )
        self.success("Finding recorded.")
        return HttpResponseRedirect(f"{self.cancel_url(workspace, target)}#findings")


class CheckpointAnnotateAction(AnnotateAction, CheckpointAction):
    explanation_text = (
        "A comment and an optional verdict on checkpoint {target.checkpoint_id}, shown on its page and the "
        "timeline, audited as annotation.create."
    )


class ThreadAnnotateAction(AnnotateAction, ThreadAction):
    explanation_text = (
        "A comment and an optional verdict on thread {target.thread_id} as a whole, audited as "
        "annotation.create."
    )
