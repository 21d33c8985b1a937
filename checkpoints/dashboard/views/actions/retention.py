"""Retention actions: edit the policy (with a preview of the unsaved policy), and sweep now as a job."""

from __future__ import annotations

import copy
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from checkpoints.dashboard.access import actor_for
from checkpoints.dashboard.retention_forms import RetentionPolicyForm
from checkpoints.dashboard.views.actions.base import ConfirmAction
from checkpoints.dashboard.views.retention import PREVIEW_RULES
from checkpoints.models import Workspace
from checkpoints.services.retention import (
    retention_policy,
    retention_policy_update,
    retention_preview,
    retention_sweep_submit,
)


class RetentionAction(ConfirmAction):
    """An action started from the workspace's retention page, which it leads back to."""

    def cancel_url(self, workspace: Workspace, target: Any) -> str:
        return reverse("dashboard:retention", kwargs={"slug": workspace.slug})


class SweepAction(RetentionAction):
    title = "Run a retention sweep now"
    button = "Sweep now"
    danger = True
    explanation_text = (
        "Expired checkpoints become tombstones and the workspace's retention rules are applied now, in a "
        "background job, exactly as the scheduled sweep would. The preview shows what it will do."
    )

    def perform(self, workspace: Workspace, target: Workspace, form: forms.Form) -> HttpResponse:
        job = retention_sweep_submit(workspace=workspace, actor=actor_for(self.request))
        self.success(f"Sweep job {job.job_id} queued.")
        return HttpResponseRedirect(self.cancel_url(workspace, target))


class RetentionPolicyAction(RetentionAction):
    """Edit the policy; "Preview" shows what retention would do under the values in the form, unsaved."""

    form_class = RetentionPolicyForm
    template_name = "checkpoints/dashboard/retention_edit.html"
    title = "Edit the retention policy"
    button = "Save policy"
    danger = True
    explanation_text = (
        "Shorter limits delete data at the next sweep, purge or idle-thread expiry. Preview the policy "
        "in the form before saving it: the preview changes nothing."
    )

    def initial(self, target: Workspace) -> dict[str, Any]:
        return retention_policy(target)

    def post(self, request: HttpRequest, workspace: Workspace, **kwargs: Any) -> HttpResponse:
        if "preview" not in request.POST:
            return super().post(request, workspace, **kwargs)
        form = self.make_form(workspace, request.POST)
        if not form.is_valid():
            return self.render_page(workspace, workspace, form)
        # An unsaved copy carrying the form's policy: the preview service reads the policy from it.
        candidate = copy.copy(workspace)
        for name, value in form.cleaned_data.items():
            setattr(candidate, name, value)
        preview = retention_preview(workspace=candidate)
        rows = [(label, preview[key]) for key, label in PREVIEW_RULES]
        self.previewed = {"preview": preview, "preview_rows": rows}
        return self.render_page(workspace, workspace, form, status=200)

    def extra_context(self, workspace: Workspace, target: Any, form: forms.Form) -> dict[str, Any]:
        return getattr(self, "previewed", {})

    def perform(self, workspace: Workspace, target: Workspace, form: forms.Form) -> HttpResponse:
        before = retention_policy(workspace)
        retention_policy_update(workspace=workspace, actor=actor_for(self.request), **form.cleaned_data)
        changed = retention_policy(workspace) != before
        self.success(
            "Retention policy saved." if changed else "The policy was already this one: nothing changed."
        )
        return HttpResponseRedirect(self.cancel_url(workspace, target))
