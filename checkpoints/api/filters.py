"""FilterSets for list endpoints: explicit filters, invalid values are a 400 (never silently ignored)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import django_filters
from django import forms
from django.db.models import F, QuerySet
from django_filters.fields import IsoDateTimeField
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema_field
from rest_framework.request import Request
from rest_framework.views import APIView

from checkpoints.api.parsers import parse_json
from checkpoints.exceptions import ValidationFailed
from checkpoints.models import Checkpoint, Job, Message, Thread
from checkpoints.models.checkpoint import CheckpointQuerySet
from checkpoints.numbers import parse_whole_number
from checkpoints.services.handoffs import HANDOFF_STATUSES, handoffs_with_status
from checkpoints.services.search import messages_matching


def names_a_filter(filterset_class: type[django_filters.FilterSet], params: Any) -> bool:
    """Whether the query names one of the FilterSet's filters: an absent parameter never filters."""
    return not params.keys().isdisjoint(filterset_class.base_filters)


def filter_queryset(
    filterset_class: type[django_filters.FilterSet], params: Any, queryset: QuerySet[Any]
) -> Any:
    """Apply a FilterSet, turning form errors into the validation_error envelope. Without any of its
    parameters it filters nothing (an absent parameter never filters), so it is not built: a FilterSet
    copies its filters and builds a form class per instance, several milliseconds of a page."""
    if not names_a_filter(filterset_class, params):
        return queryset
    filterset = filterset_class(params, queryset=queryset)
    if not filterset.is_valid():
        errors = {field: [str(e) for e in messages] for field, messages in filterset.errors.items()}
        first = next(iter(errors.items()))
        raise ValidationFailed(f"{first[0]}: {first[1][0]}", {"fields": errors})
    return filterset.qs


class FilterBackend(DjangoFilterBackend):
    """The view's `filterset_class` applied to its queryset (`WorkspaceAPIView.filter_queryset`), invalid
    values answered in the validation_error envelope. Documented by `schema.FilterSetParameters`; the
    unknown-parameter check accepts its filters (`query_params`)."""

    def filter_queryset(self, request: Request, queryset: QuerySet[Any], view: APIView) -> Any:
        filterset_class = getattr(view, "filterset_class", None)
        if filterset_class is None:
            return queryset
        return filter_queryset(filterset_class, request.query_params, queryset)


class UtcDateTimeField(IsoDateTimeField):
    """An ISO 8601 timestamp (naive = UTC) that exists in UTC: 0001-01-01T00:00:00+01:00 does not, and would
    overflow when the database adapts it."""

    def to_python(self, value: Any) -> datetime | None:
        if value == "":
            # Present but empty is not "no filter": it is not a timestamp (an absent parameter is None).
            raise forms.ValidationError("Enter a timestamp, or leave the parameter out.")
        parsed = super().to_python(value)
        if parsed is None:
            return None
        try:
            return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        except OverflowError as exc:
            raise forms.ValidationError("Enter a timestamp between the years 1 and 9999 in UTC.") from exc


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcDateTimeField


class _PresentChoiceField(django_filters.fields.ChoiceField):
    """One of the choices; present but empty (`?role=`) is not one of them (an absent parameter is None)."""

    def to_python(self, value: Any) -> Any:
        if value == "":
            raise forms.ValidationError(
                self.error_messages["invalid_choice"], code="invalid_choice", params={"value": value}
            )
        return super().to_python(value)


class ChoiceFilter(django_filters.ChoiceFilter):
    field_class = _PresentChoiceField


class ThreadCheckpointFilterSet(django_filters.FilterSet):
    """A thread's timeline filters. `namespace` and `before` need the thread, so the views apply them."""

    agent_id = django_filters.CharFilter()
    step_name = django_filters.CharFilter()
    run_id = django_filters.CharFilter()
    framework = ChoiceFilter(choices=Checkpoint.Framework.choices)
    handoff_target = django_filters.CharFilter(help_text="An agent's inbox: checkpoints handed off to it.")
    handoff_status = ChoiceFilter(
        choices=[(status, status) for status in HANDOFF_STATUSES],
        method="filter_handoff_status",
        help_text="Handoffs only: `pending`, or `taken` (the target agent wrote on the thread after it).",
    )
    written_by = django_filters.CharFilter(help_text='Who wrote it: "key:<prefix>" or "user:<username>".')
    created_after = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt")
    metadata = django_filters.CharFilter(
        method="filter_metadata",
        help_text="JSON object the metadata must contain (matches checkpoints whose metadata contains it).",
    )

    class Meta:
        model = Checkpoint
        fields: list[str] = []

    def filter_handoff_status(
        self, queryset: CheckpointQuerySet, name: str, value: str
    ) -> CheckpointQuerySet:
        return handoffs_with_status(queryset, value)

    def filter_metadata(self, queryset: QuerySet[Checkpoint], name: str, value: str) -> QuerySet[Checkpoint]:
        try:
            wanted = parse_json(value)
            if not isinstance(wanted, dict):
                raise ValidationFailed("A JSON object is required.")
            # The lookup refuses what PostgreSQL could not compare (NUL), on both databases alike.
            return queryset.filter(metadata__json_contains=wanted)
        except ValidationFailed as exc:
            message = f"metadata must be a JSON object: {exc.message}"
            raise ValidationFailed(message, {"fields": {"metadata": [exc.message]}}) from exc


class CheckpointFilterSet(ThreadCheckpointFilterSet):
    """The workspace-wide timeline's filters: a thread's, and the thread."""

    thread_id = django_filters.CharFilter(method="filter_thread_id")

    def filter_thread_id(self, queryset: QuerySet[Checkpoint], name: str, value: str) -> QuerySet[Checkpoint]:
        # Both sides share the workspace: the thread is found on its unique (workspace, thread_id) index
        # (see CheckpointQuerySet.in_thread).
        return queryset.filter(thread__workspace=F("workspace"), thread__thread_id=value)


# --- Threads, messages and jobs ------------------------------------------------------------------------

_INT64_MAX = 2**63 - 1


class _RepeatedValuesField(forms.Field):
    """Every value of a repeated query parameter (`?tag=a&tag=b`), each a non-empty string."""

    widget = forms.MultipleHiddenInput  # reads QueryDict.getlist()

    def to_python(self, value: Any) -> list[str]:
        values = [v for v in (value or []) if v != ""]
        if len(values) > 64 or any(len(v) > 255 for v in values):
            raise forms.ValidationError("At most 64 values of at most 255 characters.")
        return values


class RepeatedValuesFilter(django_filters.Filter):
    field_class = _RepeatedValuesField


class _AsciiIntegerField(forms.IntegerField):
    """forms.IntegerField also reads Arabic-Indic, full-width and "1_0" numbers; only ASCII digits count."""

    def to_python(self, value: Any) -> int | None:
        if value == "":
            # Present but empty is not "no filter": it is not a number (an absent parameter is None).
            raise forms.ValidationError("Enter a whole number, or leave the parameter out.", code="invalid")
        if value in self.empty_values:
            return None
        number = parse_whole_number(str(value))
        if number is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return number


class IntegerFilter(django_filters.NumberFilter):
    """A whole number (NumberFilter accepts decimals); bounded so no database is asked about a larger one."""

    field_class = _AsciiIntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 0)
        kwargs.setdefault("max_value", _INT64_MAX)
        super().__init__(*args, **kwargs)


class ThreadFilterSet(django_filters.FilterSet):
    """Thread list filters. `user_id` needs "" to mean "no user", which django-filter would drop as empty, so
    the view applies it (ThreadQuerySet.for_user)."""

    tag = RepeatedValuesFilter(method="filter_tag")
    q = django_filters.CharFilter(
        field_name="name",
        lookup_expr="icontains",
        max_length=255,
        help_text="Name contains (case-insensitive).",
    )
    created_after = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt")
    updated_after = UtcDateTimeFilter(field_name="updated_at", lookup_expr="gte")
    updated_before = UtcDateTimeFilter(field_name="updated_at", lookup_expr="lt")

    class Meta:
        model = Thread
        fields: list[str] = []

    @extend_schema_field(
        {
            "type": "array",
            "items": {"type": "string"},
            "description": "Repeatable: threads with any of the tags.",
        }
    )
    def filter_tag(self, queryset: QuerySet[Thread], name: str, value: list[str]) -> QuerySet[Thread]:
        return queryset.filter(tags__has_any_element=value) if value else queryset


SEARCH_HELP = (
    'Terms separated by spaces ("quoted phrase" = one term); a message matches when its text contains every '
    "term, ignoring case, in any script. JSON keys and roles are not text."
)


class WorkspaceMessageFilterSet(django_filters.FilterSet):
    """Workspace-wide message search. `user_id` is applied by the view, as for threads."""

    role = ChoiceFilter(choices=Message.Role.choices)
    search = django_filters.CharFilter(method="filter_search", help_text=SEARCH_HELP)
    thread_id = django_filters.CharFilter(field_name="thread__thread_id", max_length=128)

    class Meta:
        model = Message
        fields: list[str] = []

    def filter_search(self, queryset: QuerySet[Message], name: str, value: str) -> QuerySet[Message]:
        return messages_matching(queryset, value)


class MessageFilterSet(WorkspaceMessageFilterSet):
    """One thread's messages (ordered by seq): the workspace search's filters less the thread, and seqs."""

    thread_id = None  # removes the inherited filter
    after_seq = IntegerFilter(field_name="seq", lookup_expr="gt", help_text="Only seq > after_seq.")
    before_seq = IntegerFilter(field_name="seq", lookup_expr="lt", help_text="Only seq < before_seq.")


class JobFilterSet(django_filters.FilterSet):
    """`kind` and `status` are repeatable (`?status=queued&status=running`); an unknown value is a 400."""

    kind = django_filters.MultipleChoiceFilter(choices=Job.Kind.choices)
    status = django_filters.MultipleChoiceFilter(choices=Job.Status.choices)

    class Meta:
        model = Job
        fields: list[str] = []
