"""Set a thread's medallion scope from the dashboard: what "Summarise now" needs when the thread has none."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import reverse

from checkpoints.dashboard.access import actor_for
from checkpoints.dashboard.action_forms import ScopeForm
from checkpoints.dashboard.views.actions.threads import ThreadAction
from checkpoints.models import Thread, Workspace
from checkpoints.services.medallion_summaries import thread_scope
from checkpoints.services.threads import thread_update

# `?then=summarize`: the scope was asked for by "Summarise now", which continues once it is set.
THEN_SUMMARIZE = "summarize"


class ThreadScopeAction(ThreadAction):
    form_class = ScopeForm
    title = "Set this thread's medallion scope"
    button = "Save scope"
    explanation_text = (
        "Summaries of a thread go into the medallion of its scope: the graph nodes and tags it covers. "
        "Agents that later ask for a medallion with these nodes or tags get this thread's decisions. "
        "The scope replaces the current one (the API's PATCH threads/{{id}}/ sets the same field)."
    )

    def initial(self, target: Thread) -> dict[str, Any]:
        scope = thread_scope(target)
        return {"graph_nodes": ", ".join(scope.graph_nodes), "tags": ", ".join(scope.tags)}

    def perform(self, workspace: Workspace, target: Thread, form: forms.Form) -> HttpResponse:
        thread_update(thread=target, actor=actor_for(self.request), scope=form.cleaned_data["scope"])
        text = f"Scope of thread {target.thread_id} set."
        if self.request.GET.get("then") != THEN_SUMMARIZE:
            return self.done(workspace, target, text)
        self.success(text)
        return HttpResponseRedirect(
            reverse("dashboard:thread-summarize", args=[workspace.slug, target.thread_id])
        )
