"""Agents in the dashboard: the handoffs between them, and the agent filters of the lists.

A handoff is the checkpoint `checkpoint_handoff` writes: `handoff_from` the source agent, `handoff_target`
(and `agent_id`) the target, listed in the target's inbox (`GET checkpoints/?handoff_target=`). Whether it
is **taken** or **pending** is `checkpoints.services.handoffs`' rule.
"""

from __future__ import annotations

from typing import ClassVar

from django import forms
from django.db.models import Q

from checkpoints.dashboard.forms import DateRangeMixin, filter_by_fields
from checkpoints.models import Checkpoint, Workspace
from checkpoints.models.checkpoint import CheckpointQuerySet
from checkpoints.services.handoffs import PENDING, TAKEN, handoffs_with_status, with_takeover


def handoffs_for_list(workspace: Workspace) -> CheckpointQuerySet:
    """The workspace's handoffs (read from the partial `checkpoint_ws_inbox` index), each annotated with
    where its target took it up (`with_takeover`: all None while pending)."""
    handoffs = handoffs_with_status(Checkpoint.objects.for_workspace(workspace))
    return with_takeover(handoffs.select_related("thread").without_payload())


class HandoffFilterForm(DateRangeMixin):
    STATUSES: ClassVar[list[tuple[str, str]]] = [
        ("", "Any status"),
        (PENDING, "Pending"),
        (TAKEN, "Taken"),
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
        queryset = filter_by_fields(
            queryset, data, {"from_agent": "handoff_from", "to_agent": "handoff_target"}
        )
        if data.get("status"):
            queryset = handoffs_with_status(queryset, data["status"])
        if data.get("thread"):
            queryset = queryset.in_thread(workspace, data["thread"])
        return queryset.filter(self.date_filter("created_at"))
