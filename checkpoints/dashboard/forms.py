"""Forms for the dashboard's list filters. Django forms refuse NUL characters, over-long values and bad
dates, so hostile query strings become a form error on the page, never a database error."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, TypeVar

from django import forms
from django.db.models import Exists, Q, QuerySet

from checkpoints.dashboard.activity import DEFAULT_WINDOW, WINDOWS
from checkpoints.dashboard.audit_actions import ActionPicker, filter_by_action
from checkpoints.models import AuditEvent, Checkpoint, Job, Medallion, Message, Thread
from checkpoints.models.audit import AuditEventQuerySet
from checkpoints.models.medallion import MedallionQuerySet

_Rows = TypeVar("_Rows", bound=QuerySet[Any])


def _start_of(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _words(raw: str) -> list[str]:
    """A comma-separated list, stripped, empty parts dropped, duplicates removed (order kept)."""
    return list(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))


def filter_by_fields(queryset: _Rows, data: Mapping[str, Any], lookups: Mapping[str, str]) -> _Rows:
    """`queryset` narrowed by each field of a filter form's `data` that is filled in, to its lookup
    (`{"to_agent": "handoff_target"}`); an empty field narrows nothing."""
    for field, lookup in lookups.items():
        if data.get(field):
            queryset = queryset.filter(**{lookup: data[field]})
    return queryset


class IsoDateInput(forms.TextInput):
    """A date typed as YYYY-MM-DD: a text input, because Chromium's date input shows the reader's locale
    order instead of the ISO dates every page shows (docs/dashboard.md, "Charts, ids and times")."""

    def __init__(self) -> None:
        super().__init__(
            attrs={
                "pattern": r"\d{4}-\d{2}-\d{2}",
                "placeholder": "YYYY-MM-DD",
                "autocomplete": "off",
                "size": 12,
            }
        )


def iso_date_field(**kwargs: Any) -> forms.DateField:
    """An optional date field read and shown as YYYY-MM-DD only."""
    kwargs.setdefault("required", False)
    return forms.DateField(input_formats=["%Y-%m-%d"], widget=IsoDateInput(), **kwargs)


class DateRangeMixin(forms.Form):
    """`date_from` / `date_to`: whole UTC days, both inclusive."""

    date_from = iso_date_field(label="From")
    date_to = iso_date_field(label="To")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        start, end = cleaned.get("date_from"), cleaned.get("date_to")
        if start and end and start > end:
            raise forms.ValidationError("The start date is after the end date.")
        return cleaned

    def date_filter(self, field: str) -> Q:
        condition = Q()
        if self.cleaned_data.get("date_from"):
            condition &= Q(**{f"{field}__gte": _start_of(self.cleaned_data["date_from"])})
        if self.cleaned_data.get("date_to"):
            condition &= Q(**{f"{field}__lt": _start_of(self.cleaned_data["date_to"]) + timedelta(days=1)})
        return condition


class ThreadFilterForm(DateRangeMixin):
    ORDERINGS = {
        "-updated_at": "Recently updated",
        "updated_at": "Least recently updated",
        "-created_at": "Newest",
        "created_at": "Oldest",
    }

    q = forms.CharField(required=False, max_length=200, label="Text", help_text="Thread id or name contains")
    user_id = forms.CharField(required=False, max_length=255, label="User")
    tag = forms.CharField(required=False, max_length=500, label="Tags", help_text="Comma-separated, any")
    agent = forms.CharField(
        required=False, max_length=255, help_text="Threads with a checkpoint by this agent"
    )
    date_field = forms.ChoiceField(
        required=False, choices=[("updated_at", "Updated"), ("created_at", "Created")], label="Date"
    )
    ordering = forms.ChoiceField(required=False, choices=list(ORDERINGS.items()), label="Sort")
    field_order = ["q", "user_id", "agent", "tag", "date_field", "date_from", "date_to", "ordering"]

    def apply(self, queryset: QuerySet[Thread]) -> QuerySet[Thread]:
        data = self.cleaned_data
        if data.get("q"):
            queryset = queryset.filter(Q(thread_id__icontains=data["q"]) | Q(name__icontains=data["q"]))
        queryset = filter_by_fields(queryset, data, {"user_id": "user_id"})
        if data.get("agent"):
            queryset = queryset.filter(Exists(Checkpoint.objects.by_agent_in_thread(data["agent"])))
        tags = _words(data.get("tag") or "")
        if tags:
            queryset = queryset.filter(tags__has_any_element=tags)
        return queryset.filter(self.date_filter(data.get("date_field") or "updated_at"))

    def keyset(self) -> list[str]:
        """The page ordering: the chosen field, then the primary key the same way (indexed together)."""
        ordering = self.cleaned_data.get("ordering") or "-updated_at"
        return [ordering, "-id" if ordering.startswith("-") else "id"]


class MessageSearchForm(forms.Form):
    search = forms.CharField(required=False, max_length=200, label="Search messages")
    role = forms.ChoiceField(required=False, choices=[("", "Any role"), *Message.Role.choices])


class AuditFilterForm(DateRangeMixin):
    actor = forms.CharField(required=False, max_length=255, help_text="Contains, e.g. user:alice or key:")
    action = forms.CharField(
        required=False, max_length=64, widget=ActionPicker, help_text="One action, or a group (checkpoint.*)"
    )
    agent = forms.CharField(
        required=False,
        max_length=255,
        help_text="Exact agent id: handoffs from or to it, its checkpoints expired, re-timed or forked",
    )
    target = forms.CharField(required=False, max_length=512, help_text="Target id contains")
    field_order = ["actor", "action", "agent", "target", "date_from", "date_to"]

    def apply(self, events: AuditEventQuerySet) -> QuerySet[AuditEvent]:
        data = self.cleaned_data
        queryset: QuerySet[AuditEvent] = events.naming_agent(data["agent"]) if data.get("agent") else events
        lookups = {"actor": "actor_label__icontains", "target": "target_id__icontains"}
        queryset = filter_by_action(filter_by_fields(queryset, data, lookups), data.get("action") or "")
        return queryset.filter(self.date_filter("created_at"))


class ChartWindowForm(forms.Form):
    """The overview charts' window: the last 48 hours per hour, or the last 30 days per day."""

    window = forms.ChoiceField(
        required=False,
        choices=[(key, window.label) for key, window in WINDOWS.items()],
        initial=DEFAULT_WINDOW,
        label="Period",
    )


class MedallionFilterForm(forms.Form):
    graph_nodes = forms.CharField(
        required=False, max_length=1000, help_text="Comma-separated; medallions covering all of them"
    )
    tags = forms.CharField(required=False, max_length=1000, help_text="Comma-separated; any of them")
    status = forms.ChoiceField(
        required=False, choices=[("", "Any status"), *Medallion.Status.choices], initial="active"
    )

    def apply(self, queryset: MedallionQuerySet) -> MedallionQuerySet:
        data = self.cleaned_data
        queryset = queryset.matching_scope(
            _words(data.get("graph_nodes") or ""), _words(data.get("tags") or "")
        )
        return filter_by_fields(queryset, data, {"status": "status"})


class JobFilterForm(forms.Form):
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *Job.Status.choices])
    kind = forms.ChoiceField(required=False, choices=[("", "Any kind"), *Job.Kind.choices])

    def apply(self, queryset: QuerySet[Job]) -> QuerySet[Job]:
        return filter_by_fields(queryset, self.cleaned_data, {"status": "status", "kind": "kind"})
