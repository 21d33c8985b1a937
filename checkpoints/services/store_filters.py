"""A store search's `filter` as one ORM condition, the same on PostgreSQL and SQLite (docs/store.md,
"Filters").

The filter follows LangGraph's: `{field: value}` matches items whose top-level `field` equals `value` (a
nested object matches field by field, a list exactly); `{field: {"$op": operand}}` applies operators
`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`. The ordering operators compare numbers as numbers and strings as
strings: an operand of one type never matches a stored value of the other (nor booleans, nulls, objects).
"""

from __future__ import annotations

from typing import Any

from django.db.models import CharField, Func, JSONField, Q, Value
from django.db.models.fields.json import (  # type: ignore[attr-defined]  # not in the stubs
    KeyTransform,
    compile_json_path,
)
from django.db.models.lookups import Exact, IsNull
from django.db.models.sql.compiler import SQLCompiler

from checkpoints.exceptions import ValidationFailed

ORDERING = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
OPERATORS = {"$eq", "$ne", *ORDERING}
MAX_CONDITIONS = 64


class JsonType(Func):
    """The JSON type of the value a KeyTransform addresses, named alike on both databases: number, string,
    boolean, null, object, array (SQL NULL when absent)."""

    output_field = CharField()

    def as_postgresql(self, compiler: SQLCompiler, connection: Any, **extra: Any) -> tuple[str, Any]:
        sql, params = compiler.compile(self.source_expressions[0])
        return f"jsonb_typeof({sql})", params

    def as_sqlite(self, compiler: SQLCompiler, connection: Any, **extra: Any) -> tuple[str, Any]:
        transform: Any = self.source_expressions[0]
        lhs, params, keys = transform.preprocess_lhs(compiler, connection)
        kind = f"json_type({lhs}, %s)"
        sql = (
            f"CASE {kind} WHEN 'integer' THEN 'number' WHEN 'real' THEN 'number' WHEN 'text' THEN 'string' "
            f"WHEN 'true' THEN 'boolean' WHEN 'false' THEN 'boolean' ELSE {kind} END"
        )
        path = compile_json_path(keys)
        return sql, (*params, path, *params, path)


def filter_condition(filter_: Any, field: str = "value") -> Q:
    """The Q that keeps the items matching `filter_` (a ValidationFailed for a malformed filter)."""
    if filter_ is None:
        return Q()
    if not isinstance(filter_, dict):
        raise _invalid("filter must be a JSON object.")
    counter = [0]
    return _object_condition(filter_, field, (), counter)


def _object_condition(filter_: dict[str, Any], field: str, path: tuple[str, ...], counter: list[int]) -> Q:
    condition = Q()
    for name, wanted in filter_.items():
        if "\x00" in name:
            raise _invalid("A filter may not contain NUL characters.")
        counter[0] += 1
        if counter[0] > MAX_CONDITIONS:
            raise _invalid(f"A filter may hold at most {MAX_CONDITIONS} conditions.")
        condition &= _field_condition(field, (*path, name), wanted, counter)
    return condition


def _transform(field: str, path: tuple[str, ...]) -> Any:
    expression: Any = field
    for name in path:
        expression = KeyTransform(name, expression)
    return expression


def _field_condition(field: str, path: tuple[str, ...], wanted: Any, counter: list[int]) -> Q:
    if isinstance(wanted, dict) and any(name.startswith("$") for name in wanted):
        return _operators_condition(field, path, wanted)
    if isinstance(wanted, dict):
        if not wanted:
            return Q(Exact(JsonType(_transform(field, path)), "object"))
        return Q(Exact(JsonType(_transform(field, path)), "object")) & _object_condition(
            wanted, field, path, counter
        )
    return _equal(field, path, wanted)


def _equal(field: str, path: tuple[str, ...], wanted: Any) -> Q:
    _check_operand(wanted)
    transform = _transform(field, path)
    if wanted is None:
        return Q(Exact(JsonType(transform), "null"))
    # The type condition keeps `true` from matching the number 1 (SQLite reads JSON true as 1).
    if isinstance(wanted, bool):
        kind = "boolean"
    elif isinstance(wanted, int | float):
        kind = "number"
    else:
        kind = "array" if isinstance(wanted, list) else "string"
    return Q(Exact(JsonType(transform), kind)) & Q(transform.get_lookup("exact")(transform, _json(wanted)))


def _operators_condition(field: str, path: tuple[str, ...], operators: dict[str, Any]) -> Q:
    condition = Q()
    for operator, operand in operators.items():
        if operator not in OPERATORS:
            known = ", ".join(sorted(OPERATORS))
            raise _invalid(f"Unknown filter operator {operator!r}; use one of {known}.")
        if operator == "$eq":
            condition &= _equal(field, path, operand)
        elif operator == "$ne":
            condition &= _not_equal(field, path, operand)
        else:
            condition &= _ordered(field, path, ORDERING[operator], operand)
    return condition


def _not_equal(field: str, path: tuple[str, ...], operand: Any) -> Q:
    """Items whose value differs, including those without the field (as LangGraph's `!=` on a missing key)."""
    missing = Q(IsNull(JsonType(_transform(field, path)), True))
    return missing | ~_equal(field, path, operand)


def _ordered(field: str, path: tuple[str, ...], lookup: str, operand: Any) -> Q:
    if isinstance(operand, bool) or not isinstance(operand, int | float | str):
        raise _invalid("$gt, $gte, $lt and $lte compare a number or a string.")
    _check_operand(operand)
    kind = "string" if isinstance(operand, str) else "number"
    transform = _transform(field, path)
    return Q(Exact(JsonType(transform), kind)) & Q(transform.get_lookup(lookup)(transform, _json(operand)))


def _json(operand: Any) -> Value:
    """The operand as a JSON value, prepared as the field's own lookups prepare theirs."""
    return Value(operand, output_field=JSONField())


def _check_operand(value: Any) -> None:
    if isinstance(value, str) and "\x00" in value:
        raise _invalid("A filter may not contain NUL characters.")
    if isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            _check_operand(item)
        if isinstance(value, dict) and any("\x00" in name for name in value):
            raise _invalid("A filter may not contain NUL characters.")


def _invalid(message: str) -> ValidationFailed:
    return ValidationFailed(message, {"fields": {"filter": [message]}})
