"""Agents in the dashboard: the handoffs between them, and the agent filters of the lists.

A handoff is the checkpoint `checkpoint_handoff` writes: `handoff_from` the source agent, `handoff_target`
(and `agent_id`) the target, listed in the target's inbox (`GET checkpoints/?handoff_target=`). It is
**acknowledged** once a checkpoint continues from it (a child: same thread and namespace, the handoff as
its parent) — the target picked it up — and **pending** until then.
"""

from __future__ import annotations

from typing import ClassVar

from django import forms
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery

from checkpoints.dashboard.forms import DateRangeMixin
from checkpoints.models import Checkpoint, Workspace
from checkpoints.models.checkpoint import CheckpointQuerySet


def _replies() -> QuerySet[Checkpoint]:
    """The checkpoints continuing from the outer handoff, oldest first (a seek on the thread's timeline from
    the handoff onwards)."""
    return Checkpoint.objects.filter(
        thread=OuterRef("thread"),
        namespace=OuterRef("namespace"),
        parent_checkpoint_id=OuterRef("checkpoint_id"),
        pk__gt=OuterRef("pk"),
    ).order_by("id")


def handoffs_for_list(workspace: Workspace) -> CheckpointQuerySet:
    """The workspace's handoffs (read from the partial `checkpoint_ws_inbox` index), each annotated with the
    first checkpoint that continued from it: `reply_checkpoint_id`, `reply_agent`, `reply_at` (None while
    pending)."""
    first_reply = _replies()[:1]
    return (
        Checkpoint.objects.for_workspace(workspace)
        .filter(handoff_target__isnull=False)
        .select_related("thread")
        .without_payload()
        .annotate(
            reply_checkpoint_id=Subquery(first_reply.values("checkpoint_id")),
            reply_agent=Subquery(first_reply.values("agent_id")),
            reply_at=Subquery(first_reply.values("created_at")),
        )
    )


class HandoffFilterForm(DateRangeMixin):
    STATUSES: ClassVar[list[tuple[str, str]]] = [
        ("", "Any status"),
        ("pending", "Pending"),
        ("acknowledged", "Acknowledged"),
    ]

    agent = forms.CharField(required=False, max_length=255, help_text="From or to this agent")
    from_agent = forms.CharField(required=False, max_length=255, label="From agent")
    to_agent = forms.CharField(
        required=False, max_length=255, label="To agent", help_text="The agent's inbox"
    )
    status = forms.ChoiceField(required=False, choices=STATUSES)
    thread = forms.CharField(required=False, max_length=128, label="Thread id")
    field_order = [
        "agent",
        "from_agent",
        "to_agent",
        "status",
        "thread",
        "date_from",
        "date_to",
    ]

    def apply(self, queryset: CheckpointQuerySet, workspace: Workspace) -> CheckpointQuerySet:
        data = self.cleaned_data
        if data.get("agent"):
            queryset = queryset.filter(Q(handoff_from=data["agent"]) | Q(handoff_target=data["agent"]))
        if data.get("from_agent"):
            queryset = queryset.filter(handoff_from=data["from_agent"])
        if data.get("to_agent"):
            queryset = queryset.filter(handoff_target=data["to_agent"])
        if data.get("status"):
            acknowledged = Exists(_replies())
            queryset = queryset.filter(acknowledged if data["status"] == "acknowledged" else ~acknowledged)
        if data.get("thread"):
            queryset = queryset.in_thread(workspace, data["thread"])
        return queryset.filter(self.date_filter("created_at"))
