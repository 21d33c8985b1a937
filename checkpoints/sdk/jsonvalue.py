"""The one JSON normalisation every value the SDK sends goes through.

The checksum is computed over what the server will store, so the value hashed and the value stored must be the
same JSON. checkpnt hashed `json.dumps(state, default=str)` but stored another encoding, so a datetime in the
state made the checkpoint unrestorable; int dict keys broke the same way. Here a value is normalised once,
into plain JSON, and that result is both hashed and sent:

- datetimes, dates and times become ISO 8601 strings (aware datetimes keep their offset);
- tuples, sets and frozensets become lists (sets in a stable order);
- non-string dict keys become strings the way `json` writes them (`1` -> "1", `True` -> "true"); two keys
  that collide after that are refused;
- UUIDs, Decimals and paths become strings, enums their value, dataclasses and pydantic models their fields;
- NaN and infinities are refused (JSON has no such numbers), as are bytes and any other type.

The conversion is one-way: what restores is the JSON. For types that must survive a round trip exactly, use a
tagged encoding on top (`checkpoints.sdk.agent_checkpoint` does, for tuples, sets, datetimes and int keys).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import uuid
from collections.abc import Mapping
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import PurePath
from typing import Any

from checkpoints.integrity import canonical_json

MAX_DEPTH = 128


class NotJSONError(TypeError, ValueError):
    """A value cannot be normalised to JSON; the message names where (`$.state.items[2]`)."""


# Where a value is, built only when an error names it: "$" or (parent, ".key" or index).
Where = str | tuple[Any, str | int]


def _path(where: Where) -> str:
    steps: list[str] = []
    while isinstance(where, tuple):
        where, step = where
        steps.append(f"[{step}]" if isinstance(step, int) else step)
    return where + "".join(reversed(steps))


def _key(key: Any, where: Where) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        if not math.isfinite(key):
            raise NotJSONError(f"{_path(where)}: dict key {key!r} is not a finite number")
        return repr(key)
    if isinstance(key, enum.Enum):
        return _key(key.value, where)
    if isinstance(key, uuid.UUID | Decimal | PurePath):
        return str(key)
    if isinstance(key, datetime | date | time):
        return key.isoformat()
    raise NotJSONError(f"{_path(where)}: dict key of type {type(key).__name__} cannot be a JSON key")


def to_json(value: Any, *, path: str = "$") -> Any:
    """Return `value` as plain JSON (dict/list/str/int/float/bool/None), or raise NotJSONError."""
    return _convert(value, path, 0)


def _convert(value: Any, where: Where, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise NotJSONError(f"{_path(where)}: nested deeper than {MAX_DEPTH} levels")
    # Plain JSON types first, by exact type: most of a state is these, and a copy of them is all it needs.
    kind = type(value)
    if kind is str or kind is bool or value is None or kind is int:
        return value
    if kind is float and math.isfinite(value):
        return value
    if kind is list or kind is tuple:
        return [_convert(item, (where, i), depth + 1) for i, item in enumerate(value)]
    if isinstance(value, Mapping):
        result: dict[str, Any] = {}
        for raw_key, item in value.items():
            key = _key(raw_key, where)
            if key in result:
                message = f"keys {raw_key!r} and {key!r} collide once written as JSON"
                raise NotJSONError(f"{_path(where)}: {message}")
            result[key] = _convert(item, (where, f".{key}"), depth + 1)
        return result
    return _convert_other(value, where, depth)


def _convert_other(value: Any, where: Where, depth: int) -> Any:
    if isinstance(value, bool | str):
        return bool(value) if isinstance(value, bool) else str(value)
    if isinstance(value, int):
        return int(value)  # an IntEnum / int subclass becomes a plain int
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotJSONError(f"{_path(where)}: {value!r} is not a JSON number")
        return float(value)
    if isinstance(value, enum.Enum):
        return _convert(value.value, where, depth + 1)
    if isinstance(value, list | tuple):
        return [_convert(item, (where, i), depth + 1) for i, item in enumerate(value)]
    if isinstance(value, set | frozenset):
        items = [_convert(item, (where, "[]"), depth + 1) for item in value]
        # A set has no order; sort by canonical text so the same set always hashes the same.
        return sorted(items, key=canonical_json)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, uuid.UUID | Decimal | PurePath):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _convert(fields, where, depth + 1)
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return _convert(model_dump(mode="json"), where, depth + 1)
    if isinstance(value, bytes | bytearray | memoryview):
        raise NotJSONError(f"{_path(where)}: bytes are not JSON; encode them (e.g. base64) first")
    raise NotJSONError(f"{_path(where)}: {type(value).__name__} is not JSON-serialisable")


def to_json_object(value: Any, *, path: str) -> dict[str, Any]:
    """`to_json` for a value that must be a JSON object (context, metadata)."""
    result = to_json(value, path=path)
    if not isinstance(result, dict):
        raise NotJSONError(f"{path}: expected an object, got {type(value).__name__}")
    return result
