"""The audit log's action picker: every action the services record, grouped by what they act on, with one
"all of the group" prefix entry per group (`checkpoint.*`)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet

from checkpoints.models import AuditEvent

# Every `action` an audit_record() call writes (a test checks this list against the services).
AUDIT_ACTIONS: dict[str, tuple[str, ...]] = {
    "thread": (
        "thread.create",
        "thread.update",
        "thread.copy",
        "thread.prune",
        "thread.summarize",
        "thread.delete",
        "thread.expire",
    ),
    "checkpoint": (
        "checkpoint.fork",
        "checkpoint.handoff",
        "checkpoint.ttl",
        "checkpoint.expire",
        "checkpoint.delete_for_runs",
        "checkpoint.view",
        "checkpoint.view_diff",
    ),
    "message": ("message.delete",),
    "medallion": ("medallion.create", "medallion.update", "medallion.delete"),
    "retention": ("retention.policy", "retention.sweep", "retention.purge"),
    "storage": ("storage.pack",),
    "store": ("store.item.put", "store.item.delete"),
    "apikey": ("apikey.create", "apikey.revoke"),
    "user": ("user.login_locked",),
    "audit": ("audit.export",),
}
PREFIX_SUFFIXES = (".*", ".")  # "checkpoint.*" (the picker's spelling) and "checkpoint." both mean a prefix


def action_choices() -> list[tuple[str, Any]]:
    """Grouped choices for a <select>: per group, its prefix entry and then its actions."""
    groups: list[tuple[str, Any]] = [("", "Any action")]
    for group, actions in AUDIT_ACTIONS.items():
        entries = [(f"{group}.*", f"{group}.* (all {len(actions)})"), *((a, a) for a in actions)]
        groups.append((group, entries))
    return groups


def filter_by_action(queryset: QuerySet[AuditEvent], action: str) -> QuerySet[AuditEvent]:
    """Exact action, or every action of a prefix ending in ".*" or "."."""
    for suffix in PREFIX_SUFFIXES:
        if action.endswith(suffix):
            return queryset.filter(action__startswith=action.removesuffix(suffix) + ".")
    return queryset.filter(action=action) if action else queryset


class ActionPicker(forms.Select):
    """The grouped <select>; a value typed into the URL that is not in the list stays shown and selected."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs, choices=action_choices())

    def optgroups(self, name: str, value: list[Any], attrs: dict[str, Any] | None = None) -> list[Any]:
        known = {""} | {choice for _, entries in action_choices()[1:] for choice, _ in entries}
        extra = [v for v in value if v not in known]
        if extra:
            self.choices = [*self.choices, ("Typed", [(v, v) for v in extra])]
        return super().optgroups(name, value, attrs)
