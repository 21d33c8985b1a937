"""What a read may return of a checkpoint, "readable": not a tombstone, and pinned, or without an expiry, or
expiring later than now. Expiry thus takes effect at read time, whether or not a sweep has run.

The rule is stated once, as data (`READABLE`), and built three ways from it: a Q for querysets
(`CheckpointQuerySet.live`), SQL for the static statements of the hot path (`checkpoints.storage`), and a
test on a row in hand (`Checkpoint.is_readable`). See docs/architecture.md, "One definition per concept".
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, NamedTuple

from django.db import models
from django.db.models import Q


class Test(Enum):
    """What a term asks of its field's value."""

    IS_NULL = "is null"
    IS_TRUE = "is true"
    AFTER_NOW = "after now"


class Term(NamedTuple):
    field: str
    test: Test

    def q(self, now: datetime) -> Q:
        if self.test is Test.IS_NULL:
            return Q(**{f"{self.field}__isnull": True})
        if self.test is Test.IS_TRUE:
            return Q(**{self.field: True})
        return Q(**{f"{self.field}__gt": now})

    def sql(self, column: str, now_param: str) -> str:
        if self.test is Test.IS_NULL:
            return f"{column} IS NULL"
        if self.test is Test.IS_TRUE:
            return column
        return f"{column} > %({now_param})s"

    def holds(self, value: Any, now: datetime) -> bool:
        if self.test is Test.IS_NULL:
            return value is None
        if self.test is Test.IS_TRUE:
            return bool(value)
        return value is not None and value > now


class Rule(NamedTuple):
    """Every group must hold; a group holds when any of its terms does. The fields used are never null
    where a term compares them (a null `expires_at` is caught by its own IS NULL term first), so the SQL
    never evaluates to NULL."""

    groups: tuple[tuple[Term, ...], ...]

    def q(self, now: datetime) -> Q:
        """For a queryset's filter()."""
        combined = Q()
        for group in self.groups:
            any_of = Q()
            for term in group:
                any_of |= term.q(now)
            combined &= any_of
        return combined

    def sql(self, model: type[models.Model], alias: str, now_param: str = "now") -> str:
        """For a static statement: the row aliased `alias`, the time bound as `%(now_param)s`."""

        def column(field: str) -> str:
            return f"{alias}.{model._meta.get_field(field).column}"  # type: ignore[union-attr]

        return " AND ".join(
            "(" + " OR ".join(term.sql(column(term.field), now_param) for term in group) + ")"
            for group in self.groups
        )

    def holds(self, row: models.Model, now: datetime) -> bool:
        """For a row already in hand."""
        return all(any(term.holds(getattr(row, term.field), now) for term in group) for group in self.groups)


READABLE = Rule(
    (
        (Term("expired_at", Test.IS_NULL),),
        (Term("pinned", Test.IS_TRUE), Term("expires_at", Test.IS_NULL), Term("expires_at", Test.AFTER_NOW)),
    )
)
