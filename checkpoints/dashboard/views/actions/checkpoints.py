"""Checkpoint actions: expire it, pin or unpin it, set or clear its TTL."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import reverse

from checkpoints.dashboard.access import actor_for
from checkpoints.dashboard.action_forms import TtlForm
from checkpoints.dashboard.views.actions.base import ConfirmAction, PinOrUnpin
from checkpoints.dashboard.views.checkpoints import namespace_param
from checkpoints.models import Checkpoint, Thread, Workspace
from checkpoints.routes import checkpoint_url
from checkpoints.services.checkpoint_reads import checkpoint_get
from checkpoints.services.checkpoints import checkpoint_expire, checkpoint_set_ttl


def thread_url(workspace: Workspace, thread: Thread) -> str:
    return reverse("dashboard:thread", kwargs={"slug": workspace.slug, "thread_id": thread.thread_id})


class CheckpointAction(ConfirmAction):
    template_name = "checkpoints/dashboard/checkpoint_action.html"

    def target(self, workspace: Workspace, **kwargs: Any) -> Checkpoint:
        return checkpoint_get(
            workspace=workspace,
            thread_id=kwargs["thread_id"],
            checkpoint_id=kwargs["checkpoint_id"],
            namespace=namespace_param(self.request),
        )

    def cancel_url(self, workspace: Workspace, target: Any) -> str:
        return checkpoint_url(target, "dashboard:checkpoint", workspace=workspace)

    def done(self, workspace: Workspace, checkpoint: Checkpoint, text: str) -> HttpResponse:
        self.success(text)
        return HttpResponseRedirect(checkpoint_url(checkpoint, "dashboard:checkpoint", workspace=workspace))


class ExpireAction(CheckpointAction):
    title = "Expire this checkpoint now"
    button = "Expire now"
    danger = True
    explanation_text = (
        "Checkpoint {target.checkpoint_id} becomes a tombstone: its state, context, metadata and "
        "pending writes are erased for good; its ids, parent and checksum stay for lineage and audits."
    )

    def perform(self, workspace: Workspace, target: Checkpoint, form: forms.Form) -> HttpResponse:
        checkpoint_expire(checkpoint=target, actor=actor_for(self.request))
        return self.done(workspace, target, f"Checkpoint {target.checkpoint_id} expired.")


class PinAction(PinOrUnpin, CheckpointAction):
    title = "Pin this checkpoint"
    button = "Pin"
    explanation_text = (
        "A pinned checkpoint never expires, whatever its TTL or the retention policy says: no TTL, "
        "keep-latest or idle-thread rule removes it, and its thread is not deleted as idle while it "
        "holds it."
    )

    def perform(self, workspace: Workspace, target: Checkpoint, form: forms.Form) -> HttpResponse:
        checkpoint_set_ttl(checkpoint=target, actor=actor_for(self.request), pinned=self.pinned)
        return self.done(workspace, target, f"Checkpoint {target.checkpoint_id} {self.pin_verb}.")


class UnpinAction(PinAction):
    pinned = False
    title = "Unpin this checkpoint"
    button = "Unpin"
    explanation_text = (
        "Unpinned, the checkpoint expires again at its expiry time (if it has one), keep-latest may "
        "turn it into a tombstone, and its thread can be deleted as idle again (its idle clock "
        "restarts now)."
    )


class TtlAction(CheckpointAction):
    form_class = TtlForm
    title = "Set or extend the expiry"
    button = "Save expiry"

    def explanation(self, target: Checkpoint) -> str:
        current = (
            f"It expires at {target.expires_at:%Y-%m-%d %H:%M:%S} UTC."
            if target.expires_at
            else ("It has no expiry.")
        )
        return f"The new expiry counts from now. {current}"

    def perform(self, workspace: Workspace, target: Checkpoint, form: forms.Form) -> HttpResponse:
        ttl = form.cleaned_data.get("ttl_seconds")
        updated = checkpoint_set_ttl(checkpoint=target, actor=actor_for(self.request), ttl_seconds=ttl)
        when = f"{updated.expires_at:%Y-%m-%d %H:%M:%S} UTC" if updated.expires_at else "never"
        return self.done(workspace, target, f"Checkpoint {target.checkpoint_id} now expires: {when}.")
