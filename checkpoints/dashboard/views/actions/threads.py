"""Thread actions: fork from a checkpoint, delete, prune."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import reverse

from checkpoints.dashboard.access import actor_for
from checkpoints.dashboard.action_forms import PruneForm
from checkpoints.dashboard.fork_forms import ForkForm, editable_state
from checkpoints.dashboard.views.actions.base import ConfirmAction
from checkpoints.dashboard.views.actions.checkpoints import CheckpointAction, thread_url
from checkpoints.models import Checkpoint, Thread, Workspace
from checkpoints.services.checkpoint_reads import thread_get
from checkpoints.services.threads import thread_delete, thread_fork, thread_prune


class ThreadAction(ConfirmAction):
    def target(self, workspace: Workspace, **kwargs: Any) -> Thread:
        return thread_get(workspace=workspace, thread_id=kwargs["thread_id"])

    def cancel_url(self, workspace: Workspace, target: Any) -> str:
        return thread_url(workspace, target)

    def done(self, workspace: Workspace, thread: Thread, text: str) -> HttpResponse:
        self.success(text)
        return HttpResponseRedirect(thread_url(workspace, thread))


class ForkAction(CheckpointAction):
    """Fork as it is, or with changes: an edited state and a choice of the messages carried over."""

    form_class = ForkForm
    template_name = "checkpoints/dashboard/fork.html"
    title = "Fork a thread from this checkpoint"
    button = "Fork"
    explanation_text = (
        "A new thread starts from checkpoint {target.checkpoint_id} of {target.thread.thread_id}: its "
        "head is a copy of this checkpoint (with the state below, edited or not) and it gets the "
        "messages up to #{target.message_seq} you keep. The source thread is not changed."
    )

    def make_form(self, target: Checkpoint, data: Any = None) -> ForkForm:
        if data is None:
            return ForkForm(checkpoint=target, initial={"state": editable_state(target), "carry": "all"})
        return ForkForm(data, checkpoint=target)

    def perform(self, workspace: Workspace, target: Checkpoint, form: forms.Form) -> HttpResponse:
        assert isinstance(form, ForkForm)
        arguments = form.service_arguments()
        fork = thread_fork(
            source=target.thread,
            actor=actor_for(self.request),
            checkpoint=target,
            namespace=target.namespace,
            **arguments,
        )
        changes = [
            "state edited" if "state" in arguments else "",
            f"{len(arguments['message_ids'])} messages carried" if "message_ids" in arguments else "",
        ]
        said = "; ".join(change for change in changes if change)
        self.success(f"Forked into thread {fork.thread_id}{f' ({said})' if said else ''}.")
        return HttpResponseRedirect(thread_url(workspace, fork))


class ThreadDeleteAction(ThreadAction):
    title = "Delete this thread"
    button = "Delete thread"
    danger = True
    explanation_text = (
        "Thread {target.thread_id} and everything under it (checkpoints, pending writes, messages) are "
        "erased for good. Only the audit event remains. Medallions summarised from it are kept."
    )

    def perform(self, workspace: Workspace, target: Thread, form: forms.Form) -> HttpResponse:
        thread_delete(thread=target, actor=actor_for(self.request))
        self.success(f"Thread {target.thread_id} deleted.")
        return HttpResponseRedirect(reverse("dashboard:threads", kwargs={"slug": workspace.slug}))


class ThreadPruneAction(ThreadAction):
    form_class = PruneForm
    title = "Prune this thread's checkpoints"
    button = "Prune"
    danger = True
    explanation_text = (
        "Pruned checkpoints are deleted for good, with their pending writes. Messages are kept."
    )

    def initial(self, target: Any) -> dict[str, Any]:
        return {"strategy": "keep_latest"}

    def perform(self, workspace: Workspace, target: Thread, form: forms.Form) -> HttpResponse:
        strategy = form.cleaned_data["strategy"]
        pruned = thread_prune(thread=target, strategy=strategy, actor=actor_for(self.request))
        return self.done(workspace, target, f"Pruned {pruned} checkpoint{'s' if pruned != 1 else ''}.")
