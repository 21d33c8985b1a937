"""Check constraints shared by the models."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


def empty_or_positive(field: str, name: str) -> models.CheckConstraint:
    """The constraint `name`: `field` is null (no such setting) or above zero."""
    condition = Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__gt": 0})
    return models.CheckConstraint(condition=condition, name=name)
