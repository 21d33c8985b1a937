"""A keyset seek, the one condition every page is read by: the rows strictly after a position in an ordering.
It is written here twice, side by side: as a Q for a queryset (`Seek.after`) and in SQL for a static
statement (`seek_sql`), so the two readings of a page cannot disagree (docs/performance.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from django.db import models
from django.db.models import Q

from checkpoints.storage import model_rows


class Seek(NamedTuple):
    """What a page reads: the rows strictly after `position` (None: from the start) in `ordering` (field
    names, "-" for descending; a list's own, or its reverse going backwards), at most `limit` of them."""

    ordering: list[str]
    position: list[Any] | None
    limit: int

    def after(self) -> Q:
        """Rows strictly after `position`, for a queryset: (a > x) OR (a = x AND b > y) OR ..."""
        condition = Q()
        equal_so_far = Q()
        assert self.position is not None
        for name, value in zip(self.ordering, self.position, strict=True):
            column = name.lstrip("-")
            op = "lt" if name.startswith("-") else "gt"
            condition |= equal_so_far & Q(**{f"{column}__{op}": value})
            equal_so_far &= Q(**{column: value})
        return condition


def seek_sql(
    model: type[models.Model], alias: str, ordering: tuple[str, ...], *, after: bool
) -> tuple[str, str]:
    """`Seek.after` in SQL on the row of `model` aliased `alias` (a row comparison: the ordering's fields
    all run one way), its values bound as `seek_0`, `seek_1`...; and the ORDER BY."""
    descending = {name.startswith("-") for name in ordering}
    assert len(descending) == 1, "a static page orders every field the same way"
    columns = [f"{alias}.{_column(model, name.lstrip('-'))}" for name in ordering]
    direction = "DESC" if descending == {True} else "ASC"
    marks = ", ".join(f"%(seek_{index})s" for index in range(len(ordering)))
    condition = f"({', '.join(columns)}) {'<' if direction == 'DESC' else '>'} ({marks})" if after else ""
    return condition, ", ".join(f"{column} {direction}" for column in columns)


def seek_params(seek: Seek) -> dict[str, Any]:
    """The position's values as `seek_sql` binds them (timestamps as the backend takes them)."""
    return {
        f"seek_{index}": model_rows.adapt_datetime(value) if isinstance(value, datetime) else value
        for index, value in enumerate(seek.position or ())
    }


def _column(model: type[models.Model], name: str) -> str:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field) and field.column is not None
    return field.column
