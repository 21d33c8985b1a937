"""A thread's retention from its page: keep it until a date (its own idle expiry) and pin or unpin it, each
previewed before it is confirmed ("deleted on X instead of Y"), each through `thread_update` (audited as
`thread.update`). The dates and rules are `checkpoints.services.idle_expiry`'s (docs/retention.md)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from checkpoints.dashboard.access import actor_for
from checkpoints.dashboard.retention_forms import KeepUntilForm
from checkpoints.dashboard.views.actions.base import PinOrUnpin
from checkpoints.dashboard.views.actions.threads import ThreadAction
from checkpoints.models import Checkpoint, Thread, Workspace
from checkpoints.services.idle_expiry import idle_expiry_after_update, thread_with_idle_expiry
from checkpoints.services.retention import excess_checkpoints
from checkpoints.services.threads import thread_update

# How each rule of idle_expiry reads on these pages.
RULE_WORDS = {
    "pinned": "pinned: never deleted as idle",
    "thread": "this thread's own idle expiry",
    "workspace": "the workspace's idle-thread rule",
    None: "no rule applies: never deleted as idle",
}


def idle_expiry_change(thread: Any, after: tuple[datetime | None, str | None]) -> dict[str, Any]:
    """The change a preview shows: the thread's idle expiry after it, and whether it differs from now's."""
    return {
        "after": {"at": after[0], "rule": RULE_WORDS[after[1]]},
        "unchanged": (thread.effective_expires_at, thread.expiry_source) == after,
    }


class ThreadRetentionAction(ThreadAction):
    """An action on the thread's retention: its target carries the thread's current idle expiry."""

    template_name = "checkpoints/dashboard/thread_retention.html"

    def setup(self, request: HttpRequest, *args: Any, **kwargs: Any) -> None:
        super().setup(request, *args, **kwargs)
        self.now = timezone.now()  # one instant for the form's bounds, the preview and the write

    def target(self, workspace: Workspace, **kwargs: Any) -> Thread:
        return thread_with_idle_expiry(workspace=workspace, thread_id=kwargs["thread_id"])

    def extra_context(self, workspace: Workspace, target: Any, form: forms.Form) -> dict[str, Any]:
        return {"current_rule": RULE_WORDS[target.expiry_source], "change": self.change(workspace, target)}

    def change(self, workspace: Workspace, target: Any) -> dict[str, Any] | None:
        """The previewed change, or None before there is one to show."""
        return None

    def saved(self, workspace: Workspace, thread: Thread, what: str) -> HttpResponse:
        fresh: Any = thread_with_idle_expiry(workspace=workspace, thread_id=thread.thread_id)
        when = (
            f"{fresh.effective_expires_at:%Y-%m-%d %H:%M:%S} UTC" if fresh.effective_expires_at else "never"
        )
        return self.done(
            workspace, thread, f"{what} Deleted as idle: {when} ({RULE_WORDS[fresh.expiry_source]})."
        )


class KeepUntilAction(ThreadRetentionAction):
    """Set (or remove) the thread's own idle expiry as a date; "Preview" shows the change, unsaved."""

    form_class = KeepUntilForm
    title = "Keep this thread until…"
    button = "Save"
    explanation_text = (
        "Thread {target.thread_id} gets its own idle expiry: it replaces the workspace's idle-thread rule "
        "for this thread, longer or shorter. A pinned thread, or one holding a pinned checkpoint, is still "
        "never deleted as idle. Its checkpoints keep their own expiry dates."
    )

    def make_form(self, target: Any, data: Any = None) -> forms.Form:
        if data is not None:
            return KeepUntilForm(data, now=self.now)
        initial = {}
        if target.ttl_seconds and target.expires_at:
            initial["keep_until"] = (target.expires_at - timedelta(microseconds=1)).date()
        return KeepUntilForm(initial=initial, now=self.now)

    def post(self, request: HttpRequest, workspace: Workspace, **kwargs: Any) -> HttpResponse:
        if "preview" not in request.POST:
            return super().post(request, workspace, **kwargs)
        target = self.target(workspace, **kwargs)
        form = self.make_form(target, request.POST)
        if not form.is_valid():
            return self.render_page(workspace, target, form)
        assert isinstance(form, KeepUntilForm)
        after = idle_expiry_after_update(thread=target, now=self.now, ttl_seconds=form.ttl_seconds)
        self.previewed = idle_expiry_change(target, after)
        return self.render_page(workspace, target, form, status=200)

    def extra_context(self, workspace: Workspace, target: Any, form: forms.Form) -> dict[str, Any]:
        return {**super().extra_context(workspace, target, form), "previewable": True}

    def change(self, workspace: Workspace, target: Any) -> dict[str, Any] | None:
        return getattr(self, "previewed", None)

    def perform(self, workspace: Workspace, target: Thread, form: forms.Form) -> HttpResponse:
        assert isinstance(form, KeepUntilForm)
        thread_update(thread=target, actor=actor_for(self.request), ttl_seconds=form.ttl_seconds)
        return self.saved(workspace, target, f"Thread {target.thread_id} saved.")


class ThreadPinAction(PinOrUnpin, ThreadRetentionAction):
    """Pin (or unpin) the thread; the page shows what changes before it is confirmed."""

    title = "Pin this thread"
    button = "Pin thread"
    explanation_text = (
        "A pinned thread is never deleted as idle: neither its own idle expiry nor the workspace's "
        "rule deletes it. Pinning the thread does not pin its checkpoints: each still becomes a "
        "tombstone at its own expiry date, and keep-latest still turns older ones into tombstones "
        "(pin a checkpoint on its page to keep it)."
    )

    def change(self, workspace: Workspace, target: Any) -> dict[str, Any] | None:
        after = idle_expiry_after_update(thread=target, now=self.now, pinned=self.pinned)
        return idle_expiry_change(target, after)

    def extra_context(self, workspace: Workspace, target: Any, form: forms.Form) -> dict[str, Any]:
        live = Checkpoint.objects.filter(thread=target).live(self.now)
        counts = live.aggregate(
            live=Count("pk"), with_expiry=Count("pk", filter=Q(pinned=False, expires_at__isnull=False))
        )
        beyond = excess_checkpoints(workspace=workspace, now=self.now, thread_pks=[target.pk]).count()
        context = super().extra_context(workspace, target, form)
        return {**context, "counts": counts, "beyond_keep_latest": beyond}

    def perform(self, workspace: Workspace, target: Thread, form: forms.Form) -> HttpResponse:
        thread_update(thread=target, actor=actor_for(self.request), pinned=self.pinned)
        return self.saved(workspace, target, f"Thread {target.thread_id} {self.pin_verb}.")


class ThreadUnpinAction(ThreadPinAction):
    pinned = False
    title = "Unpin this thread"
    button = "Unpin thread"
    explanation_text = (
        "Unpinned, the thread is deleted as idle again by its own idle expiry or the workspace's rule "
        "(its idle clock restarts now), unless it holds a pinned checkpoint. Its checkpoints are not "
        "changed."
    )
