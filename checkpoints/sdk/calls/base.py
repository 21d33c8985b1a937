"""Helpers every request builder shares: path segments, query parameters, the UNSET marker, parsers."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from enum import Enum
from typing import Any, Final
from urllib.parse import quote

from checkpoints.sdk.models import Checkpoint, Page
from checkpoints.sdk.transport import Response


class Unset(Enum):
    UNSET = "UNSET"


UNSET: Final = Unset.UNSET
"""An argument the caller did not pass, as opposed to an explicit None (which means null in the API)."""


def seg(value: str) -> str:
    """One path segment, percent-encoded (an id with `/` must not change the route)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string id, got {value!r}")
    return quote(value, safe="")


def params(**values: Any) -> list[tuple[str, str]]:
    """Query parameters: None is left out, lists repeat the key, bools are true/false, datetimes ISO 8601,
    dicts JSON."""
    result: list[tuple[str, str]] = []
    for key, value in values.items():
        if value is None or value is UNSET:
            continue
        items: Iterable[Any] = value if isinstance(value, list | tuple) else [value]
        for item in items:
            result.append((key, _param(item)))
    return result


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("timestamps must be timezone-aware")
        return value.isoformat()
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return str(value)


def body_of(**values: Any) -> dict[str, Any]:
    """A request body without the arguments left UNSET (None stays: it is an explicit null)."""
    return {key: value for key, value in values.items() if value is not UNSET}


def parse_none(response: Response) -> None:
    return None


def parse_json(response: Response) -> Any:
    return response.body


def parse_checkpoint(response: Response) -> Checkpoint:
    """A checkpoint with its payload, re-hashed here: a mismatch raises ChecksumMismatch."""
    return Checkpoint.from_dict(response.body).verify()


def parse_checkpoint_page(response: Response) -> Page[Checkpoint]:
    return Page.parse(response.body, lambda row: Checkpoint.from_dict(row).verify())
