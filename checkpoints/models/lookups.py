"""Lookups over JSON that run in SQL on both databases with the same results.

PostgreSQL gets the native jsonb operators (GIN-indexable); SQLite gets an equivalent over json_each().

- `<json list field>__has_any_element=[...]`: the stored string array shares at least one element.
- `<json list field>__has_all_elements=[...]`: the stored string array holds every element (superset).
- `<text field holding JSON>__json_contains={...}`: jsonb `@>` containment semantics.
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models import JSONField, Lookup, TextField
from django.db.models.sql.compiler import SQLCompiler

from checkpoints.exceptions import ValidationFailed

SqlAndParams = tuple[str, tuple[Any, ...]]


class _ElementsLookup(Lookup):
    prepare_rhs = False

    def _values(self) -> list[str]:
        values = list(dict.fromkeys(self.rhs))
        if not all(isinstance(v, str) for v in values):
            raise ValidationFailed("Only strings can be matched against a list field.")
        return values


@JSONField.register_lookup
class HasAnyElement(_ElementsLookup):
    lookup_name = "has_any_element"

    def as_postgresql(self, compiler: SQLCompiler, connection: Any) -> SqlAndParams:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = self._values()
        if not values:
            return "FALSE", ()
        return f"{lhs} ?| %s::text[]", (*lhs_params, values)

    def as_sql(self, compiler: SQLCompiler, connection: Any) -> SqlAndParams:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = self._values()
        if not values:
            return "0 = 1", ()
        marks = ", ".join(["%s"] * len(values))
        sql = f"EXISTS (SELECT 1 FROM json_each({lhs}) AS e WHERE e.type = 'text' AND e.value IN ({marks}))"
        return sql, (*lhs_params, *values)


@JSONField.register_lookup
class HasAllElements(_ElementsLookup):
    lookup_name = "has_all_elements"

    def as_postgresql(self, compiler: SQLCompiler, connection: Any) -> SqlAndParams:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} @> %s::jsonb", (*lhs_params, json.dumps(self._values()))

    def as_sql(self, compiler: SQLCompiler, connection: Any) -> SqlAndParams:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = self._values()
        if not values:
            return "1 = 1", ()
        marks = ", ".join(["%s"] * len(values))
        sql = (
            f"(SELECT COUNT(DISTINCT e.value) FROM json_each({lhs}) AS e "
            f"WHERE e.type = 'text' AND e.value IN ({marks})) = %s"
        )
        return sql, (*lhs_params, *values, len(values))


@TextField.register_lookup
class JsonContains(Lookup):
    """jsonb containment on a text column that holds canonical JSON (checkpoint metadata)."""

    lookup_name = "json_contains"
    prepare_rhs = False

    def as_postgresql(self, compiler: SQLCompiler, connection: Any) -> SqlAndParams:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        # Matches the expression index `((metadata)::jsonb) jsonb_path_ops`.
        return f"({lhs})::jsonb @> %s::jsonb", (*lhs_params, json.dumps(self.rhs))

    def as_sql(self, compiler: SQLCompiler, connection: Any) -> SqlAndParams:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        sql, params = _SqliteContainment(lhs, list(lhs_params)).contains("'$'", [], self.rhs)
        return sql, tuple(params)


_Fragment = tuple[str, list[Any]]


class _SqliteContainment:
    """SQLite SQL equal to jsonb `root @> value`: walks `value`, addressing `root` by JSON path."""

    def __init__(self, root: str, root_params: list[Any]) -> None:
        self.root, self.root_params = root, root_params
        self.aliases = 0

    def _at(self, function: str, path: str, path_params: list[Any]) -> _Fragment:
        return f"{function}({self.root}, {path})", [*self.root_params, *path_params]

    def contains(self, path: str, path_params: list[Any], value: Any) -> _Fragment:
        type_sql, type_params = self._at("json_type", path, path_params)
        if isinstance(value, dict):
            clauses, params = [f"{type_sql} = 'object'"], list(type_params)
            for key, item in value.items():
                if '"' in key or "\\" in key:
                    raise ValidationFailed("Metadata filter keys may not contain quotes or backslashes.")
                sql, sub_params = self.contains(f"{path} || %s", [*path_params, f'."{key}"'], item)
                clauses.append(sql)
                params.extend(sub_params)
            return "(" + " AND ".join(clauses) + ")", params
        if isinstance(value, list):
            clauses, params = [f"{type_sql} = 'array'"], list(type_params)
            for item in value:
                self.aliases += 1
                alias = f"je{self.aliases}"
                sql, sub_params = self.contains(f"{alias}.fullkey", [], item)
                clauses.append(
                    f"EXISTS (SELECT 1 FROM json_each({self.root}, {path}) AS {alias} WHERE {sql})"
                )
                params.extend([*self.root_params, *path_params, *sub_params])
            return "(" + " AND ".join(clauses) + ")", params
        if value is None:
            return f"{type_sql} = 'null'", type_params
        if isinstance(value, bool):
            return f"{type_sql} = %s", [*type_params, "true" if value else "false"]
        extract_sql, extract_params = self._at("json_extract", path, path_params)
        if isinstance(value, int | float):
            return (
                f"({type_sql} IN ('integer', 'real') AND {extract_sql} = %s)",
                [*type_params, *extract_params, value],
            )
        if isinstance(value, str):
            return f"({type_sql} = 'text' AND {extract_sql} = %s)", [*type_params, *extract_params, value]
        raise ValidationFailed(f"Unsupported value in a JSON filter: {type(value).__name__}.")
