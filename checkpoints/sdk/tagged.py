"""A tagged JSON encoding for Python values that must come back with their exact types (agent-checkpoint
parity): tuples, sets, frozensets, datetimes, dates, times, timedeltas, decimals, UUIDs, bytes, non-finite
floats, and dicts whose keys are not strings (int keys stay ints).

    encode({"seen": {1, 2}, 3: (4, 5)})
    == {"__type__": "dict", "items": [[3, {"__type__": "tuple", "items": [4, 5]}],
                                      ["seen", {"__type__": "set", "items": [1, 2]}]]}

Plain JSON stays plain (readable in the dashboard). A dict that uses the tag key itself is encoded in the
`dict` form, so decoding is never ambiguous. Pickle is never used unless `allow_pickle=True` is passed to
both `encode` and `decode` (unpickling runs code: only for data you wrote yourself).
"""

from __future__ import annotations

import base64
import math
import pickle  # nosec B403 # only with allow_pickle=True, an explicit opt-in for trusted data
import uuid
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from checkpoints.integrity import canonical_json

TAG = "__type__"


def _items(values: Any, allow_pickle: bool, path: str) -> list[Any]:
    return [encode(item, allow_pickle=allow_pickle, path=f"{path}[{i}]") for i, item in enumerate(values)]


def encode(value: Any, *, allow_pickle: bool = False, path: str = "$") -> Any:
    """`value` as JSON that `decode` turns back into an equal value of the same types."""
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return value if math.isfinite(value) else {TAG: "float", "value": repr(value)}
    if kind is list:
        return _items(value, allow_pickle, path)
    if kind is dict:
        if all(type(key) is str for key in value) and TAG not in value:
            return {
                key: encode(item, allow_pickle=allow_pickle, path=f"{path}.{key}")
                for key, item in value.items()
            }
        pairs = [
            [
                encode(key, allow_pickle=allow_pickle, path=f"{path}<key>"),
                encode(item, allow_pickle=allow_pickle, path=f"{path}[{key!r}]"),
            ]
            for key, item in value.items()
        ]
        return {TAG: "dict", "items": pairs}
    if kind is tuple:
        return {TAG: "tuple", "items": _items(value, allow_pickle, path)}
    if kind in (set, frozenset):
        # Sorted by canonical text: the same set always encodes (and hashes) the same.
        items = sorted(_items(value, allow_pickle, path), key=canonical_json)
        return {TAG: kind.__name__, "items": items}
    if kind is datetime:
        return {TAG: "datetime", "value": value.isoformat()}
    if kind is date:
        return {TAG: "date", "value": value.isoformat()}
    if kind is time:
        return {TAG: "time", "value": value.isoformat()}
    if kind is timedelta:
        return {
            TAG: "timedelta",
            "days": value.days,
            "seconds": value.seconds,
            "microseconds": value.microseconds,
        }
    if kind is Decimal:
        return {TAG: "decimal", "value": str(value)}
    if kind is uuid.UUID:
        return {TAG: "uuid", "value": str(value)}
    if kind in (bytes, bytearray):
        return {TAG: kind.__name__, "base64": base64.b64encode(value).decode("ascii")}
    if allow_pickle:
        return {TAG: "pickle", "base64": base64.b64encode(pickle.dumps(value)).decode("ascii")}
    raise TypeError(
        f"{path}: {kind.__module__}.{kind.__qualname__} has no tagged encoding; convert it, or pass "
        "allow_pickle=True if you trust everyone who can write this data"
    )


_SCALARS: dict[str, Any] = {
    "datetime": datetime.fromisoformat,
    "date": date.fromisoformat,
    "time": time.fromisoformat,
    "decimal": Decimal,
    "uuid": uuid.UUID,
    "float": float,
}


def decode(value: Any, *, allow_pickle: bool = False) -> Any:
    """The inverse of `encode`."""
    if type(value) is list:
        return [decode(item, allow_pickle=allow_pickle) for item in value]
    if type(value) is not dict:
        return value
    tag = value.get(TAG)
    if tag is None:
        return {key: decode(item, allow_pickle=allow_pickle) for key, item in value.items()}
    if tag in _SCALARS:
        return _SCALARS[tag](value["value"])
    if tag == "dict":
        return {
            decode(k, allow_pickle=allow_pickle): decode(v, allow_pickle=allow_pickle)
            for k, v in value["items"]
        }
    if tag in ("tuple", "set", "frozenset"):
        items = [decode(item, allow_pickle=allow_pickle) for item in value["items"]]
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
    if tag == "timedelta":
        return timedelta(days=value["days"], seconds=value["seconds"], microseconds=value["microseconds"])
    if tag in ("bytes", "bytearray"):
        raw = base64.b64decode(value["base64"])
        return raw if tag == "bytes" else bytearray(raw)
    if tag == "pickle":
        if not allow_pickle:
            raise ValueError(
                "this state holds a pickled value; load it with allow_pickle=True if you trust it"
            )
        return pickle.loads(base64.b64decode(value["base64"]))  # nosec B301 # the caller opted in
    raise ValueError(f"unknown tagged type {tag!r}")
