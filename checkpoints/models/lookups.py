"""Lookups over JSON that run in SQL on both databases with the same results.

PostgreSQL gets the native jsonb operators (GIN-indexable); SQLite gets an equivalent over json_each().

- `<json list field>__has_any_element=[...]`: the stored string array shares at least one element.
- `<json list field>__has_all_elements=[...]`: the stored string array holds every element (superset).
- `<text field holding JSON>__json_contains={...}`: jsonb `@>` containment semantics.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db.models import JSONField, Lookup, TextField
from django.db.models.sql.compiler import SQLCompiler

from checkpoints.exceptions import ValidationFailed

SqlAndParams = tuple[str, tuple[Any, ...]]


class _ElementsLookup(Lookup):
    prepare_rhs = False

    def get_prep_lookup(self) -> Any:
        # Runs when the filter is built, so bad input fails at .filter(), not later inside query execution.
        if isinstance(self.rhs, str | bytes | dict):
            raise ValidationFailed("A list of strings is required to match a list field.")
        values = list(self.rhs)
        if not all(isinstance(v, str) for v in values):
            raise ValidationFailed("Only strings can be matched against a list field.")
        return values

    def _values(self) -> list[str]:
        return list(dict.fromkeys(self.rhs))

    sqlite_when_empty: str  # SQLite's condition for an empty list of values
    postgres_when_empty: str | None = None  # PostgreSQL's for an empty list; None: postgres_condition's

    def postgres_condition(self, lhs: str, values: list[str]) -> SqlAndParams:
        """PostgreSQL's condition on the compiled `lhs`, with its parameters after lhs's."""
        raise NotImplementedError

    def as_postgresql(self, compiler: SQLCompiler, connection: Any) -> SqlAndParams:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = self._values()
        if not values and self.postgres_when_empty is not None:
            return self.postgres_when_empty, ()
        sql, params = self.postgres_condition(lhs, values)
        return sql, (*lhs_params, *params)

    def sqlite_condition(self, matching: str, values: list[str]) -> SqlAndParams:
        """SQLite's condition over `matching` (`FROM json_each(<stored array>) AS e WHERE` its string element
        is among `values`), with its parameters: `values` first, for the marks in `matching`."""
        raise NotImplementedError

    def as_sql(self, compiler: SQLCompiler, connection: Any) -> SqlAndParams:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = self._values()
        if not values:
            return self.sqlite_when_empty, ()
        marks = ", ".join(["%s"] * len(values))
        matching = f"FROM json_each({lhs}) AS e WHERE e.type = 'text' AND e.value IN ({marks})"  # nosec B608 # compiled lhs, bound values
        sql, params = self.sqlite_condition(matching, values)
        return sql, (*lhs_params, *params)


@JSONField.register_lookup
class HasAnyElement(_ElementsLookup):
    lookup_name = "has_any_element"
    sqlite_when_empty = "0 = 1"
    postgres_when_empty = "FALSE"

    def postgres_condition(self, lhs: str, values: list[str]) -> SqlAndParams:
        return f"{lhs} ?| %s::text[]", (values,)

    def sqlite_condition(self, matching: str, values: list[str]) -> SqlAndParams:
        return f"EXISTS (SELECT 1 {matching})", tuple(values)


@JSONField.register_lookup
class HasAllElements(_ElementsLookup):
    lookup_name = "has_all_elements"
    sqlite_when_empty = "1 = 1"

    def postgres_condition(self, lhs: str, values: list[str]) -> SqlAndParams:
        return f"{lhs} @> %s::jsonb", (json.dumps(values),)

    def sqlite_condition(self, matching: str, values: list[str]) -> SqlAndParams:
        return f"(SELECT COUNT(DISTINCT e.value) {matching}) = %s", (*values, len(values))


@TextField.register_lookup
class JsonContains(Lookup):
    """jsonb containment on a text column that holds canonical JSON (checkpoint metadata)."""

    lookup_name = "json_contains"
    prepare_rhs = False

    def get_prep_lookup(self) -> Any:
        # Runs when the filter is built, so bad input fails at .filter(), not inside query execution.
        _check_filter_value(self.rhs)
        return self.rhs

    def _wanted(self) -> Any:
        return self.rhs

    def as_postgresql(self, compiler: SQLCompiler, connection: Any) -> SqlAndParams:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        # Matches the expression index `((metadata)::jsonb) jsonb_path_ops`.
        return f"({lhs})::jsonb @> %s::jsonb", (*lhs_params, json.dumps(self._wanted()))

    def as_sql(self, compiler: SQLCompiler, connection: Any) -> SqlAndParams:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        params = list(lhs_params)
        root = _Node(
            type=(f"json_type({lhs})", params),
            atom=(f"json_extract({lhs}, '$')", params),
            json=(lhs, params),
            text=(f"({lhs} -> '$')", params),
        )
        sql, sql_params = _SqliteContainment().contains(root, self._wanted())
        # A row whose text is not JSON (only a tampered row can be) must not match, nor fail the query.
        return f"CASE WHEN json_valid({lhs}) THEN {sql} ELSE 0 END", (*params, *sql_params)


def _check_filter_value(value: Any) -> None:
    """Only JSON values, and no NUL: jsonb cannot hold U+0000, so PostgreSQL would refuse the query; it is
    refused on both databases alike."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValidationFailed("A JSON filter may not contain NUL characters.")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_filter_value(key)
            _check_filter_value(item)
    elif isinstance(value, list):
        for item in value:
            _check_filter_value(item)
    elif value is not None and not isinstance(value, bool | int | float):
        raise ValidationFailed(f"Unsupported value in a JSON filter: {type(value).__name__}.")


_Fragment = tuple[str, list[Any]]
_INT64 = range(-(2**63), 2**63)


@dataclass(frozen=True)
class _Node:
    """SQL for one node of a stored JSON document: its JSON type name, its SQL value (primitives), its JSON
    text (containers), and its exact JSON text (numbers beyond 64 bits)."""

    type: _Fragment
    atom: _Fragment
    json: _Fragment
    text: _Fragment

    @classmethod
    def element(cls, parent: _Node, alias: str) -> _Node:
        """A member or element of `parent`, enumerated by `json_each(parent) AS alias`."""
        return cls(
            type=(f"{alias}.type", []),
            atom=(f"{alias}.atom", []),
            json=(f"{alias}.value", []),
            text=(f"({parent.json[0]} -> {alias}.fullkey)", list(parent.json[1])),
        )


class _SqliteContainment:
    """SQLite SQL equal to jsonb `node @> value`.

    It walks `value` and enumerates the stored document with json_each() rather than addressing it by JSON
    path, so any object key works (SQLite paths cannot express a key holding a double quote).
    """

    def __init__(self) -> None:
        self.aliases = 0

    def contains(self, node: _Node, value: Any) -> _Fragment:
        type_sql, type_params = node.type
        if isinstance(value, dict | list):
            kind = "object" if isinstance(value, dict) else "array"
            clauses, params = [f"{type_sql} = '{kind}'"], list(type_params)
            pairs = value.items() if isinstance(value, dict) else ((None, item) for item in value)
            for key, item in pairs:
                self.aliases += 1
                alias = f"je{self.aliases}"
                sub_sql, sub_params = self.contains(_Node.element(node, alias), item)
                key_sql, key_params = (f"{alias}.key = %s AND ", [key]) if key is not None else ("", [])
                clauses.append(
                    f"EXISTS (SELECT 1 FROM json_each({node.json[0]}) AS {alias} WHERE {key_sql}{sub_sql})"  # nosec B608 # compiled SQL, bound values
                )
                params.extend([*node.json[1], *key_params, *sub_params])
            return "(" + " AND ".join(clauses) + ")", params
        if value is None:
            return f"{type_sql} = 'null'", list(type_params)
        if isinstance(value, bool):
            return f"{type_sql} = '{'true' if value else 'false'}'", list(type_params)
        atom_sql, atom_params = node.atom
        if isinstance(value, int) and value not in _INT64:
            # SQLite reads integers beyond 64 bits as doubles: compare the exact stored text instead. A stored
            # float (1e+30) still equals the integer it spells (10**30), as a jsonb numeric would.
            text_sql, text_params = node.text
            sql = f"({type_sql} = 'integer' AND {text_sql} = %s)"
            params = [*type_params, *text_params, str(value)]
            try:
                as_float = float(value)
            except OverflowError:  # no double is that large, so no stored float can equal it
                return sql, params
            return (
                f"({sql} OR ({type_sql} = 'real' AND {atom_sql} = %s))",
                [*params, *type_params, *atom_params, as_float],
            )
        if isinstance(value, int | float):
            # 1 and 1.0 are the same number, as in jsonb.
            return (
                f"({type_sql} IN ('integer', 'real') AND {atom_sql} = %s)",
                [*type_params, *atom_params, value],
            )
        if isinstance(value, str):
            return f"({type_sql} = 'text' AND {atom_sql} = %s)", [*type_params, *atom_params, value]
        raise ValidationFailed(f"Unsupported value in a JSON filter: {type(value).__name__}.")
