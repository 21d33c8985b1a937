"""Rows to and from static statements with Django's own definitions: column lists from the models' fields,
values prepared and rows converted with Django's per-field code, rows back as model instances.

It exists so that the hot path's SQL (`save_sql`, `read_sql`, `append_sql`, `checkpoint_pages`) never
restates a column list or a conversion: the ORM lends them, and a new field reaches every statement. See
docs/architecture.md, "The hot path".
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, NamedTuple, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections, models

from checkpoints.models import Checkpoint, Message, PendingWrite, StoredValue, Thread

M = TypeVar("M", bound=models.Model)

CHECKPOINT = Checkpoint._meta.db_table
THREAD = Thread._meta.db_table
PENDING_WRITE = PendingWrite._meta.db_table
VALUE = StoredValue._meta.db_table
MESSAGE = Message._meta.db_table


def model_fields(
    model: type[models.Model], *, with_pk: bool = True, skip: tuple[str, ...] = ()
) -> list[models.Field[Any, Any]]:
    fields = model._meta.concrete_fields
    return [f for f in fields if (with_pk or not f.primary_key) and f.attname not in skip]


def column_name(field: models.Field[Any, Any]) -> str:
    assert field.column is not None  # concrete fields have a column
    return field.column


def columns(model: type[models.Model], alias: str, skip: tuple[str, ...] = ()) -> str:
    """The model's columns in field order, those of the fields named in `skip` left out (`load` takes a
    row of them)."""
    return ", ".join(f"{alias}.{column_name(f)}" for f in model_fields(model, skip=skip))


# Django's own field classes whose preparation for the database (`get_db_prep_save`) gives back a value of
# this exact type, or None, as it is, on every backend. Such values skip it; a subclass of these, any other
# field and any other value are prepared by Django. (Not integers: on psycopg 3 Django sends each as the
# column's own integer type.)
_KEPT_AS_IS: dict[type[models.Field[Any, Any]], type] = {
    models.CharField: str,
    models.TextField: str,
    models.BooleanField: bool,
}


class Prepared(NamedTuple):
    """How one field's value is prepared for a statement: its attribute, and the type kept as it is."""

    attname: str
    kept: type | None
    field: models.Field[Any, Any]


def preparation(fields: Sequence[models.Field[Any, Any]]) -> tuple[Prepared, ...]:
    """For `adapted`: worked out once per statement's field list."""

    return tuple(Prepared(field.attname, _KEPT_AS_IS.get(type(field)), field) for field in fields)


def adapted(instance: models.Model, fields: Sequence[Prepared]) -> list[Any]:
    """The fields' values as the database takes them: Django's own per-field preparation, skipped for the
    values it would give back as they are (`_KEPT_AS_IS`)."""
    db = connections[DEFAULT_DB_ALIAS]  # once: through `django.db.connection`, each field would look it up
    values = []
    for attname, kept, field in fields:
        value = getattr(instance, attname)
        if kept is None or (value is not None and type(value) is not kept):
            value = field.get_db_prep_save(value, db)
        values.append(value)
    return values


def adapt_datetime(value: Any) -> Any:
    return connection.ops.adapt_datetimefield_value(value)


@cache
def _loading(
    model: type[models.Model], vendor: str, skip: tuple[str, ...]
) -> tuple[list[str], list[tuple[int, Any, list[Any]]]]:
    """The attnames of `columns(model, alias, skip)` in order, and for each field with converters its
    position, column expression and Django's converters (the backend's, then the field's)."""
    table = model._meta.db_table
    converted = []
    for index, field in enumerate(model_fields(model, skip=skip)):
        column = field.get_col(table)
        converters = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        if converters:
            converted.append((index, column, converters))
    return [field.attname for field in model_fields(model, skip=skip)], converted


def load(model: type[M], values: Sequence[Any], skip: tuple[str, ...] = ()) -> M:
    """A model instance from a row of `columns(model, alias, skip)`, as `Model.from_db` makes it (the
    fields in `skip` deferred)."""
    db = connections[DEFAULT_DB_ALIAS]
    attnames, converted = _loading(model, db.vendor, skip)
    row = list(values)
    for index, column, converters in converted:
        value = row[index]
        for converter in converters:
            value = converter(value, column, db)
        row[index] = value
    return model.from_db(db.alias, attnames, row)


def width(model: type[models.Model], skip: tuple[str, ...] = ()) -> int:
    return len(model_fields(model, skip=skip))
