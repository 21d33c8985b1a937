"""Canonical encoding and SHA-256 checksum of a checkpoint record.

This module is shared by the server and the SDK, so it imports nothing from Django.

The checksum covers the *whole immutable record* (docs/checkpoints.md), not just the state: tampering with
the metadata, the step, the parent or the agent is caught as surely as tampering with the state.

Canonical JSON = sorted keys, no insignificant whitespace, UTF-8 (non-ASCII kept as is), numbers exactly as
Python's `json` writes them, NaN/Infinity refused. The server stores state, context and metadata as their
canonical text and hashes the record by splicing those texts in (`record_checksum_from_parts`), which yields
the same bytes as encoding the whole record at once (`record_checksum`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

# The fields of the record that say which step wrote it: the agent, its framework and the step of its run.
STEP_FIELDS: tuple[str, ...] = (
    "agent_id",
    "framework",
    "schema_version",
    "step_index",
    "step_name",
    "run_id",
)
# Every field of the immutable record, in the order the checksum encodes them (sorted, as JSON sorts keys).
CHECKSUM_FIELDS: tuple[str, ...] = tuple(
    sorted(
        (
            "thread_id",
            "namespace",
            "checkpoint_id",
            "parent_id",
            *STEP_FIELDS,
            "state",
            "context",
            "metadata",
            "handoff_target",
            "handoff_from",
            "created_at",
        )
    )
)
# The JSON documents of the record; everything else is a scalar (string, int or null).
PAYLOAD_FIELDS: frozenset[str] = frozenset({"state", "context", "metadata"})

_encoder = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
# How that encoder writes a string (ensure_ascii=False): quoted, with only `"`, `\\` and controls escaped.
_json_string = json.encoder.encode_basestring


class CanonicalEncodingError(ValueError):
    """The value cannot be encoded canonically (NaN, infinity, lone surrogate, non-JSON type)."""


def canonical_json(value: Any) -> str:
    """Encode a JSON-compatible value canonically. Raises CanonicalEncodingError if it is not JSON."""
    try:
        text = _encoder.encode(value)
        # A lone surrogate survives json encoding with ensure_ascii=False but is not valid UTF-8.
        text.encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:
        raise CanonicalEncodingError(str(exc)) from exc
    return text


def canonical_bytes(value: Any) -> bytes:
    """The canonical UTF-8 bytes of a JSON-compatible value."""
    return canonical_json(value).encode("utf-8")


def format_timestamp(value: datetime) -> str:
    """The canonical form of a timestamp: UTC, microseconds, `Z` suffix (what the API renders),
    e.g. `2026-01-02T03:04:05.000006Z`."""
    if value.tzinfo is None:
        raise CanonicalEncodingError("timestamps must be timezone-aware")
    # isoformat pads the year to four digits (strftime's %Y does not on every platform) and, unlike strftime,
    # costs no detour through the C library; in UTC it ends in "+00:00".
    return value.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def parse_timestamp(value: str) -> datetime:
    """Parse an ISO 8601 timestamp with an explicit offset (or `Z`) into an aware UTC datetime.

    Raises ValueError for anything else: no offset, not a timestamp, or outside the years 1-9999 once in UTC.
    Digits beyond microseconds are dropped (the record keeps microseconds).
    """
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
        if parsed.tzinfo is None:
            raise ValueError("timestamp has no timezone offset")
        return parsed.astimezone(UTC)
    except OverflowError as exc:  # e.g. 0001-01-01T00:00:00+01:00 is before year 1 in UTC
        raise ValueError("timestamp out of range") from exc


def _scalar(field: str, value: Any) -> Any:
    if field == "created_at":
        if isinstance(value, datetime):
            return format_timestamp(value)
        if isinstance(value, str):
            # Any ISO 8601 spelling of the instant hashes like the canonical one the server stores.
            try:
                return format_timestamp(parse_timestamp(value))
            except ValueError as exc:
                raise CanonicalEncodingError(f"created_at is not an ISO 8601 timestamp: {exc}") from exc
    return value


def record_checksum(record: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a checkpoint record given as plain values (what an SDK client holds).

    `record` must hold every field of CHECKSUM_FIELDS (other keys, such as the `checksum` of an API response,
    are ignored); `created_at` may be an aware datetime or any ISO 8601 string with an offset. So a client
    verifies a restored checkpoint with `record_checksum(response.json()) == response.json()["checksum"]`.
    """
    missing = [field for field in CHECKSUM_FIELDS if field not in record]
    if missing:
        raise CanonicalEncodingError(f"record is missing {', '.join(missing)}")
    document = {field: _scalar(field, record[field]) for field in CHECKSUM_FIELDS}
    return hashlib.sha256(canonical_bytes(document)).hexdigest()


def _scalar_json(value: Any) -> str:
    """`canonical_json` of a record's scalar: strings, integers and null written as the encoder writes them,
    without its dispatch (a lone surrogate is refused when the whole record is encoded)."""
    if value is None:
        return "null"
    kind = type(value)
    if kind is str:
        return _json_string(value)
    if kind is int:
        return int.__repr__(value)
    return canonical_json(value)


def record_checksum_from_parts(scalars: Mapping[str, Any], payloads: Mapping[str, str | None]) -> str:
    """SHA-256 (hex) of a record whose JSON documents are already canonical text (how the server stores them).

    Produces exactly the bytes `record_checksum` would for the decoded values, without decoding them.
    """
    parts: list[str] = []
    for field in CHECKSUM_FIELDS:
        if field in PAYLOAD_FIELDS:
            text = payloads[field]
            encoded = "null" if text is None else text
        else:
            encoded = _scalar_json(_scalar(field, scalars[field]))
        parts.append(f'"{field}":{encoded}')
    try:
        record = ("{" + ",".join(parts) + "}").encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: not valid UTF-8
        raise CanonicalEncodingError(str(exc)) from exc
    return hashlib.sha256(record).hexdigest()
