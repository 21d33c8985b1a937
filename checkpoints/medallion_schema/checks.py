"""Primitive checks for medallion.v1 documents: each takes a value and its JSON path and raises
`SchemaError` naming that path. Django-free (the SDK imports this package)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TypeVar

from checkpoints.integrity import format_timestamp, parse_timestamp

SCHEMA_VERSION = "medallion.v1"
HIGH_LEVEL_MAX_CHARS = 300
SUBSYSTEM_STATUSES = ("unknown", "stable", "in_progress", "deprecated")
PRIORITIES = ("low", "medium", "high")
STATUSES = ("active", "stale", "superseded")

SCOPE_ITEM_MAX_CHARS = 255
SCOPE_MAX_ITEMS = 256
ID_MAX_CHARS = 64
NAME_MAX_CHARS = 200
TEXT_MAX_CHARS = 4000
ITEM_MAX_CHARS = 1000
LIST_MAX_ITEMS = 1000
MODEL_MAX_CHARS = 255
SESSION_SUMMARY_MAX_CHARS = 200_000
TRANSCRIPTS_MAX_ITEMS = 20_000

T = TypeVar("T")


class SchemaError(ValueError):
    """A document does not follow medallion.v1. `path` is the JSON path of the offending value."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


# --- primitive checks ---------------------------------------------------------------------------------


def check_text(value: str, path: str) -> None:
    # PostgreSQL text/jsonb cannot hold NUL, and a lone surrogate is not UTF-8: refuse both here, once.
    if "\x00" in value:
        raise SchemaError(path, "NUL characters are not allowed")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SchemaError(path, "not valid Unicode (lone surrogate)") from None


def text(value: Any, path: str, *, max_chars: int, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise SchemaError(path, f"expected a string, got {type_name(value)}")
    check_text(value, path)
    if not allow_empty and not value.strip():
        raise SchemaError(path, "must not be empty")
    if len(value) > max_chars:
        raise SchemaError(path, f"longer than {max_chars} characters ({len(value)})")
    return value


def text_list(value: Any, path: str, *, max_items: int = LIST_MAX_ITEMS) -> list[str]:
    items = array(value, path, max_items=max_items)
    return [text(item, f"{path}[{i}]", max_chars=ITEM_MAX_CHARS) for i, item in enumerate(items)]


def array(value: Any, path: str, *, max_items: int) -> list[Any]:
    if not isinstance(value, list):
        raise SchemaError(path, f"expected an array, got {type_name(value)}")
    if len(value) > max_items:
        raise SchemaError(path, f"more than {max_items} items ({len(value)})")
    return value


def choice(value: Any, path: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise SchemaError(path, f"expected one of {', '.join(choices)}, got {value!r}"[:300])
    return value


def confidence(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SchemaError(path, f"expected a number, got {type_name(value)}")
    if not 0.0 <= value <= 1.0:
        raise SchemaError(path, f"must be between 0 and 1, got {value}")
    return float(value)


def timestamp(value: Any, path: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise SchemaError(path, f"expected an ISO 8601 timestamp string, got {type_name(value)}")
    try:
        return parse_timestamp(value)
    except ValueError:
        raise SchemaError(path, "expected an ISO 8601 timestamp with a UTC offset") from None


def format_ts(value: datetime | None) -> str | None:
    return format_timestamp(value) if value is not None else None


def json_value(value: Any, path: str, depth: int = 0) -> None:
    """Artefacts are free JSON, but every string in them (keys too) must be storable text."""
    if depth > 64:
        raise SchemaError(path, "nested deeper than 64 levels")
    if isinstance(value, str):
        check_text(value, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise SchemaError(path, "object keys must be strings")
            check_text(key, f"{path}.{key}")
            json_value(item, f"{path}.{key}", depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            json_value(item, f"{path}[{i}]", depth + 1)
    elif value is not None and not isinstance(value, bool | int | float):
        raise SchemaError(path, f"not a JSON value ({type_name(value)})")


def type_name(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number" if isinstance(value, int | float) else type(value).__name__)


def obj(
    value: Any,
    path: str,
    *,
    required: Iterable[str] = (),
    optional: Iterable[str] = (),
    read_only: Iterable[str] = (),
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SchemaError(path, f"expected an object, got {type_name(value)}")
    known = {*required, *optional}
    for key in value:
        if key in read_only:
            raise SchemaError(f"{path}.{key}", "read-only; the server sets it")
        if key not in known:
            raise SchemaError(f"{path}.{key}", "unknown field")
    for key in required:
        if key not in value:
            raise SchemaError(f"{path}.{key}", "required")
    return value


def fields_for(require_all: bool, required: tuple[str, ...], defaulted: tuple[str, ...]) -> dict[str, Any]:
    """Keyword arguments for `_object`: with `require_all` (model output) defaults are not accepted."""
    if require_all:
        return {"required": (*required, *defaulted)}
    return {"required": required, "optional": defaulted}


def unique_ids(items: list[Any], path: str) -> None:
    seen: set[str] = set()
    for i, item in enumerate(items):
        if item.id in seen:
            raise SchemaError(f"{path}[{i}].id", f"duplicate id {item.id!r}")
        seen.add(item.id)


def items_of(raw: Any, path: str, parse: Callable[[Any, str], T]) -> list[T]:
    return [parse(item, f"{path}[{i}]") for i, item in enumerate(array(raw, path, max_items=LIST_MAX_ITEMS))]


def stable_id(prefix: str, text: str) -> str:
    """A deterministic id for a statement: the same words (case, spacing and punctuation aside) give the
    same id, so merging the same decision twice never duplicates it."""
    words = re.findall(r"\w+", text.casefold())
    return f"{prefix}-{hashlib.sha256(' '.join(words).encode()).hexdigest()[:10]}"
