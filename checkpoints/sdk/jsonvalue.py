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


def _key(key: Any, path: str) -> str:
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
            raise NotJSONError(f"{path}: dict key {key!r} is not a finite number")
        return repr(key)
    if isinstance(key, enum.Enum):
        return _key(key.value, path)
    if isinstance(key, uuid.UUID | Decimal | PurePath):
        return str(key)
    if isinstance(key, datetime | date | time):
        return key.isoformat()
    raise NotJSONError(f"{path}: dict key of type {type(key).__name__} cannot be a JSON key")


def to_json(value: Any, *, path: str = "$", _depth: int = 0) -> Any:
    """Return `value` as plain JSON (dict/list/str/int/float/bool/None), or raise NotJSONError."""
    if _depth > MAX_DEPTH:
        raise NotJSONError(f"{path}: nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)  # an IntEnum / int subclass becomes a plain int
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotJSONError(f"{path}: {value!r} is not a JSON number")
        return float(value)
    if isinstance(value, enum.Enum):
        return to_json(value.value, path=path, _depth=_depth + 1)
    if isinstance(value, Mapping):
        result: dict[str, Any] = {}
        for raw_key, item in value.items():
            key = _key(raw_key, path)
            if key in result:
                raise NotJSONError(f"{path}: keys {raw_key!r} and {key!r} collide once written as JSON")
            result[key] = to_json(item, path=f"{path}.{key}", _depth=_depth + 1)
        return result
    if isinstance(value, list | tuple):
        return [to_json(item, path=f"{path}[{i}]", _depth=_depth + 1) for i, item in enumerate(value)]
    if isinstance(value, set | frozenset):
        items = [to_json(item, path=f"{path}[]", _depth=_depth + 1) for item in value]
        # A set has no order; sort by canonical text so the same set always hashes the same.
        return sorted(items, key=canonical_json)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, uuid.UUID | Decimal | PurePath):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return to_json(fields, path=path, _depth=_depth + 1)
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return to_json(model_dump(mode="json"), path=path, _depth=_depth + 1)
    if isinstance(value, bytes | bytearray | memoryview):
        raise NotJSONError(f"{path}: bytes are not JSON; encode them (e.g. base64) first")
    raise NotJSONError(f"{path}: {type(value).__name__} is not JSON-serialisable")


def to_json_object(value: Any, *, path: str) -> dict[str, Any]:
    """`to_json` for a value that must be a JSON object (context, metadata)."""
    result = to_json(value, path=path)
    if not isinstance(result, dict):
        raise NotJSONError(f"{path}: expected an object, got {type(value).__name__}")
    return result
