"""FilterSets for list endpoints: explicit filters, invalid values are a 400 (never silently ignored)."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import QuerySet

from checkpoints.api.parsers import parse_json
from checkpoints.exceptions import ValidationFailed
from checkpoints.models import Checkpoint


def filter_queryset(
    filterset_class: type[django_filters.FilterSet], params: Any, queryset: QuerySet[Any]
) -> Any:
    """Apply a FilterSet, turning form errors into the validation_error envelope."""
    filterset = filterset_class(params, queryset=queryset)
    if not filterset.is_valid():
        errors = {field: [str(e) for e in messages] for field, messages in filterset.errors.items()}
        first = next(iter(errors.items()))
        raise ValidationFailed(f"{first[0]}: {first[1][0]}", {"fields": errors})
    return filterset.qs


class CheckpointFilterSet(django_filters.FilterSet):
    """Timeline filters. `namespace` and `before` need the thread, so the views apply them."""

    agent_id = django_filters.CharFilter()
    step_name = django_filters.CharFilter()
    run_id = django_filters.CharFilter()
    framework = django_filters.ChoiceFilter(choices=Checkpoint.Framework.choices)
    handoff_target = django_filters.CharFilter(help_text="An agent's inbox: checkpoints handed off to it.")
    thread_id = django_filters.CharFilter(field_name="thread__thread_id")
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")
    metadata = django_filters.CharFilter(
        method="filter_metadata", help_text="A JSON object; matches checkpoints whose metadata contains it."
    )

    class Meta:
        model = Checkpoint
        fields: list[str] = []

    def filter_metadata(self, queryset: QuerySet[Checkpoint], name: str, value: str) -> QuerySet[Checkpoint]:
        wanted = parse_json(value)
        if not isinstance(wanted, dict):
            raise ValidationFailed("metadata must be a JSON object.", {"metadata": value[:200]})
        return queryset.filter(metadata__json_contains=wanted)
