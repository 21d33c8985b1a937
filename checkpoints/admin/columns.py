"""List columns every Cairn changelist shares: timestamps with their seconds and durations in human units,
the same way the dashboard shows them (its `stamp` and `duration` filters)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.contrib import admin
from django.db import models

from checkpoints.templatetags.dashboard import duration, stamp

Column = Callable[[Any], Any]


def timestamp_column(field: models.Field[Any, Any]) -> Column:
    @admin.display(description=str(field.verbose_name), ordering=field.name, empty_value="-")
    def column(obj: Any) -> Any:
        return stamp(getattr(obj, field.name)) or None

    column.__name__ = field.name
    return column


def duration_column(field: models.Field[Any, Any]) -> Column:
    @admin.display(description=str(field.verbose_name), ordering=field.name, empty_value="-")
    def column(obj: Any) -> Any:
        value = getattr(obj, field.name)
        return None if value is None else duration(value)

    column.__name__ = field.name
    return column


def readable_columns(model: type[models.Model], names: Sequence[Any]) -> list[Any]:
    """`names` (a list_display) with every DateTimeField shown to the second in UTC and every integer
    field named `*_seconds` as a duration ("30 days", "2 h 5 min"); other entries unchanged."""
    fields = {field.name: field for field in model._meta.get_fields() if isinstance(field, models.Field)}
    columns: list[Any] = []
    for name in names:
        field = fields.get(name) if isinstance(name, str) else None
        if isinstance(field, models.DateTimeField):
            columns.append(timestamp_column(field))
        elif isinstance(field, models.IntegerField) and field.name.endswith("_seconds"):
            columns.append(duration_column(field))
        else:
            columns.append(name)
    return columns
